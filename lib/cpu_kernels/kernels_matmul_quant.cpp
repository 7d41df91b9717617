// mul_mat with quantized weights (a) and float activations (b), in ggml's style:
//
// 1. Every column of b (a row of K values at (j, i2, i3)) is quantized once into the activation
//    blocks of a's type (cpu_kernels/quant_dot.hpp), into the shared work buffer, the threads taking
//    columns in turn. However many rows of a meet a column, it is quantized once.
// 2. The outputs are cut into units of (batch, block of kRowBlock rows of a); each thread takes a
//    contiguous share of units and, for each unit, each group of up to kMaxDotColumns columns of b
//    in turn, computes the dots of the block's rows with those columns: the block's weights stay in
//    cache across the groups, and each weight row is decoded once per group.
//
// The dot products are the instruction-set table's of this CPU (core/isa.hpp).
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/quant.hpp"
#include "cpu_kernels/kernels.hpp"
#include "cpu_kernels/quant_dot.hpp"
#include "cpu_kernels/row_iter.hpp"

namespace xb::cpu_kernels {

namespace {

constexpr int64_t kRowBlock = 16;

// Work buffer: the quantized columns of b, then one f32 row per thread for columns that are not
// packed f32.
struct Layout {
    size_t act_row = 0;   // bytes of one quantized column
    size_t act_bytes = 0;
    size_t scratch_per_thread = 0;
};

Layout layout_of(const Tensor& dst) {
    const Tensor& a = *dst.src[0];
    const Tensor& b = *dst.src[1];
    Layout l;
    l.act_row = activation_row_bytes(a.type, a.ne[0]);
    l.act_bytes = work_align_up(l.act_row * static_cast<size_t>(b.nrows()));
    l.scratch_per_thread = work_align_up(static_cast<size_t>(b.ne[0]) * sizeof(float));
    return l;
}

}  // namespace

bool weights_supported(DType t) { return !is_quantized(t) || quant_dot().dot[static_cast<int>(t)] != nullptr; }

size_t mul_mat_quant_work_size(const Tensor& dst, int nth) {
    const Layout l = layout_of(dst);
    return l.act_bytes + l.scratch_per_thread * static_cast<size_t>(std::max(nth, 1)) + kWorkAlign;
}

void compute_mul_mat_quant(const ComputeParams& p, Tensor& dst) {
    const Tensor& a = *dst.src[0];
    const Tensor& b = *dst.src[1];
    if (dst.is_empty()) return;
    const int64_t k = a.ne[0];
    const QuantDot& table = quant_dot();
    const QuantDot::DotFn dot = table.dot[static_cast<int>(a.type)];
    const Layout l = layout_of(dst);
    std::byte* work = p.aligned_work();
    std::byte* act = work;
    auto* scratch = reinterpret_cast<float*>(work + l.act_bytes + l.scratch_per_thread * static_cast<size_t>(p.ith));

    // 1. Quantize the columns of b.
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
        table.quantize_activations(a.type, x, act + l.act_row * static_cast<size_t>(c), k);
    }
    p.barrier();

    // 2. Dots, a block of rows of a against every column of b at a time.
    const int64_t m = a.ne[1];
    const int64_t n = b.ne[1];
    const int64_t row_blocks = (m + kRowBlock - 1) / kRowBlock;
    const int64_t batches = b.ne[2] * b.ne[3];
    const int64_t r2 = b.ne[2] / a.ne[2];
    const int64_t r3 = b.ne[3] / a.ne[3];
    const auto units = p.split(batches * row_blocks);
    for (int64_t u = units.begin; u < units.end; ++u) {
        const int64_t batch = u / row_blocks;
        const int64_t i0 = (u % row_blocks) * kRowBlock;
        const int64_t i1 = std::min(m, i0 + kRowBlock);
        const int64_t i2 = batch % b.ne[2];
        const int64_t i3 = batch / b.ne[2];
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
    }
}

}  // namespace xb::cpu_kernels
