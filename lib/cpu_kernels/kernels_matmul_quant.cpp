// mul_mat with quantized weights (a) and float activations (b), in ggml's style:
//
// 1. Every column of b (a row of K values at (j, i2, i3)) is quantized once into the activation
//    blocks of a's type (cpu_kernels/quant_dot.hpp), into the shared work buffer, the threads taking
//    columns in turn. However many rows of a meet a column, it is quantized once.
// 2. The outputs are cut into units of (batch, block of kRowBlock rows of a); the threads take runs
//    of units from a shared counter as they finish the last (WorkQueue, as ggml's chunk counter: a
//    thread on a slower core takes fewer). For each unit, each group of up to kMaxDotColumns
//    columns of b in turn, a thread computes the dots of the block's rows with those columns: the
//    block's weights stay in cache across the groups, and each weight row is decoded once per group.
//
// The dot products are the instruction-set table's of this CPU (core/isa.hpp). On CPUs with
// AVX-512 VNNI, products of kTileMinColumns columns or more take the tile path instead of step 2:
// tiles of a decoded once into int8 panels, multiplied with every column (quant_tiles.hpp).
#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/buffer.hpp"
#include "core/q4k_x8.hpp"
#include "core/quant.hpp"
#include "cpu_kernels/kernels.hpp"
#include "cpu_kernels/quant_dot.hpp"
#include "cpu_kernels/quant_tiles.hpp"
#include "cpu_kernels/row_iter.hpp"

namespace xb::cpu_kernels {

namespace {

constexpr int64_t kRowBlock = 16;

// True when a's q4_K rows are stored 8 interleaved (the CPU's repacked weight buffer type).
bool grouped_q4_K(const Tensor& a) {
    const Buffer* buffer = storage_buffer(a);
    return buffer != nullptr && buffer->stored_layout(a) == StoredLayout::Q4KRows8;
}

// The groups of a's matrix (i02, i03) when grouped_q4_K(a): each matrix takes its rows' bytes.
const BlockQ4_Kx8* matrix_groups(const Tensor& a, int64_t i02, int64_t i03) {
    return reinterpret_cast<const BlockQ4_Kx8*>(static_cast<const std::byte*>(a.data) + i02 * a.nb[2] + i03 * a.nb[3]);
}

// The tile path (quant_tiles.hpp) where this CPU has it, the type a decoder (for grouped weights,
// the groups' decoder), and enough columns per weight matrix to repay decoding its tiles.
const QuantTiles* tiles_for(const Tensor& dst) {
    const Tensor& a = *dst.src[0];
    const Tensor& b = *dst.src[1];
    const QuantTiles* tiles = quant_tiles();
    const bool worth = b.ne[1] >= kTileMinColumns && a.ne[0] % kQK == 0;
    if (tiles == nullptr || !worth) return nullptr;
    if (grouped_q4_K(a)) return tiles->decode_q4_K_x8 != nullptr ? tiles : nullptr;
    return tiles->decode[static_cast<int>(a.type)] != nullptr ? tiles : nullptr;
}

// Work buffer: the WorkQueue's counter; the quantized columns of b, or with tiles the columns as the
// tile kernel reads them (each column quantized into the thread's own blocks first, so the blocks of
// every column are never held at once) and one panel per thread; then, per thread, one f32 row for
// columns that are not packed f32 (and the one column's blocks with tiles).
struct Layout {
    size_t act_row = 0;   // bytes of one quantized column
    size_t f32_row = 0;   // one f32 column in the thread's scratch, aligned (the blocks follow it)
    size_t act_bytes = 0;      // every column's blocks (row path)
    size_t columns_bytes = 0;  // TileColumns (tile path)
    size_t panel_bytes = 0;    // one TilePanel (tile path)
    size_t scratch_per_thread = 0;
};

Layout layout_of(const Tensor& dst) {
    const Tensor& a = *dst.src[0];
    const Tensor& b = *dst.src[1];
    Layout l;
    l.act_row = activation_row_bytes(a.type, a.ne[0]);
    l.f32_row = work_align_up(static_cast<size_t>(b.ne[0]) * sizeof(float));
    l.scratch_per_thread = l.f32_row;
    if (tiles_for(dst) != nullptr) {
        l.columns_bytes = work_align_up(TileColumns::bytes(a.ne[0], b.ne[1], b.ne[2] * b.ne[3]));
        l.panel_bytes = work_align_up(TilePanel::bytes(a.ne[0]));
        l.scratch_per_thread += work_align_up(l.act_row);
    } else {
        l.act_bytes = work_align_up(l.act_row * static_cast<size_t>(b.nrows()));
    }
    return l;
}

// Step 2 with tiles: each unit (batch, kTileRows rows of a) decodes its rows once into the thread's
// panel and multiplies it with every column of the batch.
void tile_products(const ComputeParams& p, Tensor& dst, const QuantTiles& tiles, const TileColumns& columns,
                   TilePanel& panel, bool grouped, WorkQueue& queue) {
    const Tensor& a = *dst.src[0];
    const Tensor& b = *dst.src[1];
    const QuantTiles::DecodeFn decode = tiles.decode[static_cast<int>(a.type)];
    const int64_t m = a.ne[1];
    const int64_t n = b.ne[1];
    const int64_t row_tiles = (m + kTileRows - 1) / kTileRows;
    const int64_t r2 = b.ne[2] / a.ne[2];
    const int64_t r3 = b.ne[3] / a.ne[3];
    const int64_t units = b.ne[2] * b.ne[3] * row_tiles;
    queue.for_each(units, p.nth, [&](int64_t u) {
        const int64_t batch = u / row_tiles;
        const int64_t i0 = (u % row_tiles) * kTileRows;
        const int rows = static_cast<int>(std::min<int64_t>(kTileRows, m - i0));
        const int64_t i2 = batch % b.ne[2];
        const int64_t i3 = batch / b.ne[2];
        const std::byte* a_rows = static_cast<const std::byte*>(a.data) + (i2 / r2) * a.nb[2] + (i3 / r3) * a.nb[3] + i0 * a.nb[1];
        if (grouped) {  // two 8-row groups (m and i0 are multiples of 8), decoded as they are
            static_assert(kTileRows == 2 * kQ4KRowsPerGroup);
            const int64_t blocks = a.ne[0] / kQKK;
            const BlockQ4_Kx8* first = matrix_groups(a, i2 / r2, i3 / r3) + i0 / kQ4KRowsPerGroup * blocks;
            tiles.decode_q4_K_x8(first, rows > kQ4KRowsPerGroup ? first + blocks : nullptr, a.ne[0], panel);
        } else {
            decode(a_rows, a.nb[1], rows, a.ne[0], panel);
        }
        auto* out = reinterpret_cast<float*>(static_cast<std::byte*>(dst.data) + i0 * dst.nb[0] + i2 * dst.nb[2] + i3 * dst.nb[3]);
        tiles.product(panel, columns, columns.column(batch, 0), static_cast<int>(n), rows, out, dst.nb[1] / sizeof(float));
    });
}

}  // namespace

bool weights_supported(DType t) { return !is_quantized(t) || quant_dot().dot[static_cast<int>(t)] != nullptr; }

size_t mul_mat_quant_work_size(const Tensor& dst, int nth) {
    const Layout l = layout_of(dst);
    const auto threads = static_cast<size_t>(std::max(nth, 1));
    return WorkQueue::kSlotBytes + l.act_bytes + l.columns_bytes + (l.panel_bytes + l.scratch_per_thread) * threads + kWorkAlign;
}

void compute_mul_mat_quant(const ComputeParams& p, Tensor& dst) {
    const Tensor& a = *dst.src[0];
    const Tensor& b = *dst.src[1];
    if (dst.is_empty()) return;
    const int64_t k = a.ne[0];
    const QuantDot& table = quant_dot();
    const QuantDot::DotFn dot = table.dot[static_cast<int>(a.type)];
    const QuantTiles* tiles = tiles_for(dst);
    const Layout l = layout_of(dst);
    const auto ith = static_cast<size_t>(p.ith);
    std::byte* const scratch_start = p.aligned_work();
    WorkQueue queue(scratch_start);
    std::byte* work = scratch_start + WorkQueue::kSlotBytes;
    std::byte* act = work;
    const TileColumns columns = tiles != nullptr ? TileColumns::at(work + l.act_bytes, k, b.ne[1], b.ne[2] * b.ne[3], a.type) : TileColumns{};
    std::byte* thread_area = work + l.act_bytes + l.columns_bytes + (l.panel_bytes + l.scratch_per_thread) * ith;
    TilePanel panel = tiles != nullptr ? TilePanel::at(thread_area, k) : TilePanel{};
    auto* scratch = reinterpret_cast<float*>(thread_area + l.panel_bytes);
    std::byte* column_blocks = thread_area + l.panel_bytes + l.f32_row;

    // 1. Quantize the columns of b (and lay them out for the tiles).
    const auto cols = p.split(b.nrows());
    for (int64_t c = cols.begin; c < cols.end; ++c) {
        const RowIndex r = row_index(b, c);
        const float* x = nullptr;
        if (packed_f32_rows(b)) {
            x = f32_row(b, r);
        } else {
            const std::byte* row = row_ptr(b, r);
            for (int64_t i = 0; i < k; ++i) scratch[i] = load_at(b, row, i);
            x = scratch;
        }
        std::byte* blocks = tiles != nullptr ? column_blocks : act + l.act_row * static_cast<size_t>(c);
        table.quantize_activations(a.type, x, blocks, k);
        if (tiles != nullptr) columns.set_column(c, blocks);
    }
    if (p.ith == 0) queue.reset();
    p.barrier();
    const bool grouped = grouped_q4_K(a);
    if (tiles != nullptr) return tile_products(p, dst, *tiles, columns, panel, grouped, queue);

    // 2. Dots, a block of rows of a against every column of b at a time.
    const int64_t m = a.ne[1];
    const int64_t n = b.ne[1];
    const int64_t row_blocks = (m + kRowBlock - 1) / kRowBlock;
    const int64_t batches = b.ne[2] * b.ne[3];
    const int64_t r2 = b.ne[2] / a.ne[2];
    const int64_t r3 = b.ne[3] / a.ne[3];
    const int64_t units = batches * row_blocks;
    queue.for_each(units, p.nth, [&](int64_t u) {
        const int64_t batch = u / row_blocks;
        const int64_t i0 = (u % row_blocks) * kRowBlock;
        const int64_t i1 = std::min(m, i0 + kRowBlock);
        const int64_t i2 = batch % b.ne[2];
        const int64_t i3 = batch / b.ne[2];
        if (grouped) {  // 8 rows a call (m a multiple of 8, kRowBlock too), one column at a time
            const int64_t blocks = k / kQKK;
            const BlockQ4_Kx8* groups = matrix_groups(a, i2 / r2, i3 / r3);
            for (int64_t j = 0; j < n; ++j) {
                const auto* column = reinterpret_cast<const BlockQ8_K*>(act + l.act_row * static_cast<size_t>(j + n * batch));
                auto* out = reinterpret_cast<std::byte*>(dst.data) + j * dst.nb[1] + i2 * dst.nb[2] + i3 * dst.nb[3];
                for (int64_t i = i0; i < i1; i += kQ4KRowsPerGroup) {
                    float dots[kQ4KRowsPerGroup];
                    table.dot_q4_K_x8(k, groups + i / kQ4KRowsPerGroup * blocks, column, dots);
                    for (int r = 0; r < kQ4KRowsPerGroup; ++r) *reinterpret_cast<float*>(out + (i + r) * dst.nb[0]) = dots[r];
                }
            }
            return;
        }
        const std::byte* a_matrix = static_cast<const std::byte*>(a.data) + (i2 / r2) * a.nb[2] + (i3 / r3) * a.nb[3];
        // Up to kMaxDotColumns columns per call: each weight row is decoded once for all of them.
        for (int64_t j0 = 0; j0 < n; j0 += kMaxDotColumns) {
            const int ncols = static_cast<int>(std::min<int64_t>(kMaxDotColumns, n - j0));
            // Column j of batch (i2, i3) is row j + n * batch of b in row order.
            const std::byte* cols = act + l.act_row * static_cast<size_t>(j0 + n * batch);
            auto* out = reinterpret_cast<std::byte*>(dst.data) + j0 * dst.nb[1] + i2 * dst.nb[2] + i3 * dst.nb[3];
            for (int64_t i = i0; i < i1; ++i) {
                float dots[kMaxDotColumns];
                dot(k, a_matrix + i * a.nb[1], cols, l.act_row, ncols, dots);
                for (int c = 0; c < ncols; ++c) *reinterpret_cast<float*>(out + c * dst.nb[1] + i * dst.nb[0]) = dots[c];
            }
        }
    });
}

}  // namespace xb::cpu_kernels
