// mul_mat (f32/f16/bf16 a) with many columns of b: packed panels and the outer-product tile of
// the CPU's instruction set (GemmKernel in cpu_kernels/matmul_tiles.hpp), BLIS's loop nest.
//
// All of b is packed first, by all threads: per batch, groups of nr columns, each group one
// [K][nr] panel. Each thread then takes units of (batch, block of mc rows of a, range of column
// groups); for each chunk of kc along K it packs its block of a ([mc / mr][kc][mr], kept in L2)
// and runs the tile over every (column group, row group) pair: the group's kc x nr piece of b stays
// in L1 while the block's mr x kc panels of a stream past it. Chunks after the first add to dst.
// f16 and bf16 rows are converted as they are packed; rows of other layouts (strided elements) are
// converted to f32 chunk by chunk before packing.
// On CPUs with AVX512-BF16, packed bf16 weights take the bf16 tile instead (Bf16GemmKernel): their
// panels hold bf16 pairs, packed from a's rows in place, and b's rows are rounded to bf16 (as
// ggml's CPU rounds them), for twice the f32 tile's rate.
#include <algorithm>
#include <cstdint>

#include "cpu_kernels/kernels.hpp"
#include "cpu_kernels/matmul_tiles.hpp"

namespace xb::cpu_kernels {

namespace {

// Up to this many columns of b, kernels_matmul.cpp's dot tiles (reading a in place) beat packing
// a: graph-bench's BM_MulMat/*_sweep over batch sizes, results/cpu/mul-mat-packed-2026-11-24.md.
constexpr int64_t kDotTileMaxColumns = 32;
// Bytes of b's kc x nr piece, which stays in L1 while panels of a stream past it: sets kc.
constexpr int64_t kBPieceBytes = 24 * 1024;
// Bytes of a thread's packed block of a (mc x kc), which stays in L2: sets mc.
constexpr int64_t kABlockBytes = 256 * 1024;

int64_t ceil_div(int64_t n, int64_t d) { return (n + d - 1) / d; }

// Pointers to elements [k0, k0 + len) of `count` rows of matrix (i2, i3) of t from row `first`;
// those past `valid` repeat the last valid row (their results are never stored). Rows that cannot
// be read in place as floats are converted into scratch.
void chunk_rows(const Tensor& t, int64_t first, int64_t valid, int count, int64_t i2, int64_t i3, int64_t k0,
                int64_t len, float* scratch, const float** rows) {
    const bool in_place = f32_rows_in_place(t);
    for (int i = 0; i < count; ++i) {
        if (i >= valid) {
            rows[i] = rows[valid - 1];
            continue;
        }
        const std::byte* src = t.element_ptr(k0, first + i, i2, i3);
        if (in_place) {
            rows[i] = reinterpret_cast<const float*>(src);
        } else {
            float* row = scratch + i * len;
            load_row_f32(t.type, src, t.nb[0], len, len, row);
            rows[i] = row;
        }
    }
}

// Where panel row i starts (element k0 of matrix (i2, i3) of t): row first + i, or for the rows
// past `valid` the last valid one (their results are never stored).
const std::byte* panel_row(const Tensor& t, int64_t first, int64_t valid, int i, int64_t i2, int64_t i3, int64_t k0) {
    return t.element_ptr(k0, first + std::min<int64_t>(i, valid - 1), i2, i3);
}

// The two kinds of panels the loop nest below runs, each a 4-byte cell per row and step along K.
// F32Panels: one element per cell, any float type of a converted to f32 (GemmKernel).
struct F32Panels {
    using Cell = float;
    static constexpr int64_t kPerCell = 1;
    GemmKernel gemm;
    int mr() const { return gemm.mr; }
    int nr() const { return gemm.nr; }
    // Scratch per thread for `rows` rows of a chunk of kc: the rows converted to f32.
    static size_t scratch_bytes(int rows, int64_t kc) { return static_cast<size_t>(rows * kc) * sizeof(float); }
    // Packed f32, f16 and bf16 rows are packed as they are (converted by the packer); others are
    // converted to f32 rows in scratch first.
    void pack(const Tensor& t, int64_t first, int64_t valid, int rows, int64_t i2, int64_t i3, int64_t k0, int64_t len,
              std::byte* scratch, Cell* out) const {
        if (t.nb[0] == type_size(t.type)) {
            const std::byte* typed[kMaxPanelRows];
            for (int i = 0; i < rows; ++i) typed[i] = panel_row(t, first, valid, i, i2, i3, k0);
            if (pack_typed_rows(gemm.pack, t.type, typed, rows, len, out)) return;
        }
        const float* src[kMaxPanelRows];
        chunk_rows(t, first, valid, rows, i2, i3, k0, len, reinterpret_cast<float*>(scratch), src);
        gemm.pack.f32(src, rows, len, out);
    }
    void tile(int64_t len, const Cell* a, const Cell* b, float* c, int64_t ldc, bool accumulate,
              const TilePrefetch& ahead) const {
        gemm.tile(len, a, b, c, ldc, accumulate, ahead);
    }
};

// Bf16Panels: pairs of bf16 (Bf16GemmKernel): a's packed bf16 rows read in place, b's rows rounded
// to bf16 (converted to f32 first where they are not f32).
struct Bf16Panels {
    using Cell = uint32_t;
    static constexpr int64_t kPerCell = 2;
    const Bf16GemmKernel* kernel;
    int mr() const { return kernel->mr; }
    int nr() const { return kernel->nr; }
    static size_t scratch_bytes(int rows, int64_t kc) {
        return static_cast<size_t>(rows * kc) * (sizeof(float) + sizeof(uint16_t));
    }
    // Packed bf16 rows, read in place: a's, for this kernel to apply; b's are rounded instead.
    static bool in_place(const Tensor& t) { return t.type == DType::BF16 && t.nb[0] == sizeof(uint16_t); }
    void pack(const Tensor& t, int64_t first, int64_t valid, int rows, int64_t i2, int64_t i3, int64_t k0, int64_t len,
              std::byte* scratch, Cell* out) const {
        const uint16_t* src[kMaxPanelRows];
        if (in_place(t)) {
            for (int i = 0; i < rows; ++i) {
                src[i] = reinterpret_cast<const uint16_t*>(panel_row(t, first, valid, i, i2, i3, k0));
            }
        } else {
            const float* f32[kMaxPanelRows];
            chunk_rows(t, first, valid, rows, i2, i3, k0, len, reinterpret_cast<float*>(scratch), f32);
            auto* rounded = reinterpret_cast<uint16_t*>(scratch + static_cast<size_t>(rows * len) * sizeof(float));
            for (int i = 0; i < rows; ++i) {
                uint16_t* row = rounded + i * len;
                if (i < valid) f32_to_bf16_row(f32[i], row, len);
                src[i] = i < valid ? row : src[valid - 1];
            }
        }
        kernel->pack(src, rows, len, out);
    }
    void tile(int64_t len, const Cell* a, const Cell* b, float* c, int64_t ldc, bool accumulate,
              const TilePrefetch& ahead) const {
        kernel->tile(ceil_div(len, kPerCell), a, b, c, ldc, accumulate, ahead);
    }
};

template <class Panels>
struct PackedPlan {
    Panels panels;
    int64_t k = 0;        // shared dim
    int64_t m = 0;        // rows of a = dst dim 0
    int64_t n = 0;        // rows of b = dst dim 1
    int64_t batches = 0;  // b2 * b3
    int64_t kc = 0;       // K per chunk (a whole number of cells but for the last chunk)
    int64_t chunks = 0;   // chunks along K
    int64_t mc = 0;       // rows of a per block, a multiple of mr
    int64_t groups = 0;   // groups of nr columns of b per batch
    int64_t cells = 0;    // cells of a panel's row: K / kPerCell rounded up
    size_t b_bytes = 0;   // packed b, at the start of the work buffer
    size_t a_bytes = 0;   // each thread's packed block of a
    size_t scratch_bytes = 0;  // each thread's rows converted for packing (one chunk of a panel)

    PackedPlan(const Tensor& dst, Panels p) : panels(p) {
        using Cell = typename Panels::Cell;
        constexpr int64_t kPerCell = Panels::kPerCell;
        const Tensor& a = *dst.src[0];
        const Tensor& b = *dst.src[1];
        k = a.ne[0];
        m = a.ne[1];
        n = b.ne[1];
        batches = b.ne[2] * b.ne[3];
        const int64_t kc_max = kBPieceBytes / static_cast<int64_t>(sizeof(Cell) * panels.nr()) * kPerCell;
        chunks = std::max<int64_t>(1, ceil_div(k, kc_max));
        kc = ceil_div(ceil_div(k, chunks), kPerCell) * kPerCell;  // chunks of nearly equal length
        cells = ceil_div(k, kPerCell);
        const int64_t mr = panels.mr();
        const int64_t kc_cells = kc / kPerCell;
        const int64_t mc_max = std::max<int64_t>(1, kABlockBytes / static_cast<int64_t>(sizeof(Cell) * kc_cells) / mr) * mr;
        mc = std::min(mc_max, ceil_div(m, mr) * mr);
        groups = ceil_div(n, panels.nr());
        b_bytes = work_align_up(static_cast<size_t>(batches * groups * cells * panels.nr()) * sizeof(Cell));
        a_bytes = work_align_up(static_cast<size_t>(mc * kc_cells) * sizeof(Cell));
        scratch_bytes = work_align_up(Panels::scratch_bytes(std::max(panels.mr(), panels.nr()), kc));
    }
    // Where the [cells][nr] panel of column group g of batch `batch` starts in the packed b.
    int64_t b_panel_offset(int64_t batch, int64_t g) const { return (batch * groups + g) * cells * panels.nr(); }
};

// Packs every column group of b, chunk by chunk; threads split (batch, group, chunk) units.
template <class Panels>
void pack_b(const ComputeParams& params, const Tensor& b, const PackedPlan<Panels>& plan, typename Panels::Cell* out,
            std::byte* scratch) {
    const int nr = plan.panels.nr();
    const auto [u0, u1] = params.split(plan.batches * plan.groups * plan.chunks);
    for (int64_t u = u0; u < u1; ++u) {
        const int64_t chunk = u % plan.chunks;
        const int64_t g = (u / plan.chunks) % plan.groups;
        const int64_t batch = u / plan.chunks / plan.groups;
        const int64_t k0 = chunk * plan.kc;
        const int64_t len = std::min(plan.kc, plan.k - k0);
        plan.panels.pack(b, g * nr, std::min<int64_t>(nr, plan.n - g * nr), nr, batch % b.ne[2], batch / b.ne[2], k0, len,
                         scratch, out + plan.b_panel_offset(batch, g) + k0 / Panels::kPerCell * nr);
    }
}

// Units of (batch, block of mc rows of a, range of column groups), row block fastest. Column
// groups are split only when blocks and batches alone leave too few units to balance the threads.
struct Units {
    int64_t m_blocks;
    int64_t n_ranges;
    int64_t per_range;  // column groups per range
    int64_t count(int64_t batches) const { return m_blocks * n_ranges * batches; }
};

Units make_units(int64_t m_blocks, int64_t batches, int64_t groups, int nth) {
    Units u{m_blocks, 1, groups};
    const int64_t base = u.m_blocks * batches;
    const int64_t want = nth > 1 ? 4 * static_cast<int64_t>(nth) : 1;
    if (base >= want) return u;
    u.per_range = ceil_div(groups, std::min(groups, ceil_div(want, base)));
    u.n_ranges = ceil_div(groups, u.per_range);
    return u;
}

template <class Panels>
struct PackedJob {
    using Cell = typename Panels::Cell;
    const Tensor* a;
    const Tensor* b;
    Tensor* dst;
    const PackedPlan<Panels>* plan;
    const Cell* b_packed;
    Cell* a_block;       // this thread's packed block of a
    std::byte* scratch;  // this thread's conversion rows
};

// One tile of dst at (row m0, column n0) of matrix (i2, i3) from packed panels: straight into dst
// when the tile is whole and dst's columns are packed floats, else through a local tile of which
// only the valid part is stored.
template <class Panels>
void run_tile(const PackedJob<Panels>& job, int64_t len, const typename Panels::Cell* a, const typename Panels::Cell* b,
              int64_t m0, int64_t rows, int64_t n0, int64_t cols, int64_t i2, int64_t i3, bool accumulate,
              const TilePrefetch& ahead) {
    const Panels& panels = job.plan->panels;
    Tensor& dst = *job.dst;
    if (rows == panels.mr() && cols == panels.nr() && dst.nb[0] == sizeof(float) && dst.nb[1] % sizeof(float) == 0) {
        auto* c = reinterpret_cast<float*>(dst.element_ptr(m0, n0, i2, i3));
        panels.tile(len, a, b, c, static_cast<int64_t>(dst.nb[1] / sizeof(float)), accumulate, ahead);
        return;
    }
    float tile[kMaxPanelRows * kMaxPanelRows];
    panels.tile(len, a, b, tile, panels.mr(), false, ahead);
    for (int64_t j = 0; j < cols; ++j) {
        for (int64_t i = 0; i < rows; ++i) {
            auto* d = reinterpret_cast<float*>(dst.element_ptr(m0 + i, n0 + j, i2, i3));
            const float v = tile[j * panels.mr() + i];
            *d = accumulate ? *d + v : v;
        }
    }
}

// A unit of work: a block of rows of a in one batch, against a range of column groups.
struct Unit {
    int64_t batch;
    int64_t m_block;
    int64_t g0, g1;
};

Unit unit_at(const Units& units, int64_t groups, int64_t u) {
    const int64_t range = (u / units.m_blocks) % units.n_ranges;
    const int64_t g0 = range * units.per_range;
    return {u / units.m_blocks / units.n_ranges, u % units.m_blocks, g0, std::min(groups, g0 + units.per_range)};
}

// The rows of a that `unit` packs for its chunk from k0, as a region to fetch ahead (every line
// in TilePrefetch::count); none where a's elements are not packed in its rows (they go through a
// conversion, not straight to the packer).
template <class Panels>
TilePrefetch a_chunk_region(const PackedJob<Panels>& job, const Unit& unit, int64_t k0) {
    const Tensor& a = *job.a;
    const Tensor& b = *job.b;
    const PackedPlan<Panels>& plan = *job.plan;
    if (a.nb[0] != type_size(a.type) || k0 >= plan.k) return {};
    const int64_t m0 = unit.m_block * plan.mc;
    const int64_t rows = std::min(plan.mc, plan.m - m0);
    const int64_t i02 = unit.batch % b.ne[2] / (b.ne[2] / a.ne[2]);
    const int64_t i03 = unit.batch / b.ne[2] / (b.ne[3] / a.ne[3]);
    TilePrefetch region;
    region.first_row = a.element_ptr(k0, m0, i02, i03);
    region.stride = a.nb[1];
    region.row_bytes = static_cast<size_t>(std::min(plan.kc, plan.k - k0)) * type_size(a.type);
    region.count = rows * TilePrefetch::lines_per_row(region.row_bytes);
    return region;
}

// Each chunk of K: the unit's rows of a packed, then every tile of the chunk, which between them
// fetch the next chunk's rows (or, after the last, those of `next`, this thread's next unit).
template <class Panels>
void run_unit(const PackedJob<Panels>& job, const Unit& unit, const TilePrefetch& next) {
    const Tensor& a = *job.a;
    const Tensor& b = *job.b;
    const PackedPlan<Panels>& plan = *job.plan;
    const int mr = plan.panels.mr();
    const int nr = plan.panels.nr();
    const int64_t m0 = unit.m_block * plan.mc;
    const int64_t rows = std::min(plan.mc, plan.m - m0);
    const int64_t row_groups = ceil_div(rows, mr);
    const int64_t i2 = unit.batch % b.ne[2];
    const int64_t i3 = unit.batch / b.ne[2];
    const int64_t i02 = i2 / (b.ne[2] / a.ne[2]);
    const int64_t i03 = i3 / (b.ne[3] / a.ne[3]);
    const int64_t calls = (unit.g1 - unit.g0) * row_groups;
    for (int64_t k0 = 0; k0 < plan.k; k0 += plan.kc) {
        const int64_t len = std::min(plan.kc, plan.k - k0);
        const int64_t len_cells = ceil_div(len, Panels::kPerCell);
        for (int64_t rg = 0; rg < row_groups; ++rg) {
            plan.panels.pack(a, m0 + rg * mr, std::min<int64_t>(mr, rows - rg * mr), mr, i02, i03, k0, len, job.scratch,
                             job.a_block + rg * len_cells * mr);
        }
        const TilePrefetch ahead = k0 + plan.kc < plan.k ? a_chunk_region(job, unit, k0 + plan.kc) : next;
        int64_t call = 0;
        for (int64_t g = unit.g0; g < unit.g1; ++g) {
            const auto* b_piece = job.b_packed + plan.b_panel_offset(unit.batch, g) + k0 / Panels::kPerCell * nr;
            const int64_t cols = std::min<int64_t>(nr, plan.n - g * nr);
            for (int64_t rg = 0; rg < row_groups; ++rg, ++call) {
                run_tile(job, len, job.a_block + rg * len_cells * mr, b_piece, m0 + rg * mr,
                         std::min<int64_t>(mr, rows - rg * mr), g * nr, cols, i2, i3, k0 > 0, ahead.share(call, calls));
            }
        }
    }
}

template <class Panels>
void compute_packed(const ComputeParams& params, Tensor& dst, const PackedPlan<Panels>& plan) {
    using Cell = typename Panels::Cell;
    std::byte* work = params.aligned_work();
    auto* b_packed = reinterpret_cast<Cell*>(work);
    std::byte* mine = work + plan.b_bytes + static_cast<size_t>(params.ith) * (plan.a_bytes + plan.scratch_bytes);
    auto* a_block = reinterpret_cast<Cell*>(mine);
    std::byte* scratch = mine + plan.a_bytes;
    pack_b(params, *dst.src[1], plan, b_packed, scratch);
    params.barrier();  // every thread reads column groups packed by the others

    const PackedJob<Panels> job{dst.src[0], dst.src[1], &dst, &plan, b_packed, a_block, scratch};
    const Units units = make_units(ceil_div(plan.m, plan.mc), plan.batches, plan.groups, params.nth);
    const auto [u0, u1] = params.split(units.count(plan.batches));
    for (int64_t u = u0; u < u1; ++u) {
        const TilePrefetch next = u + 1 < u1 ? a_chunk_region(job, unit_at(units, plan.groups, u + 1), 0) : TilePrefetch{};
        run_unit(job, unit_at(units, plan.groups, u), next);
    }
}

// The bf16 kernel for packed bf16 weights where the CPU has one, else null.
const Bf16GemmKernel* bf16_kernel_for(const Tensor& dst) {
    return Bf16Panels::in_place(*dst.src[0]) ? bf16_gemm_kernel() : nullptr;
}

template <class Plan>
size_t work_size(const Plan& plan, int nth) {
    return plan.b_bytes + static_cast<size_t>(std::max(nth, 1)) * (plan.a_bytes + plan.scratch_bytes) + kWorkAlign;
}

}  // namespace

bool mul_mat_packed_applies(const Tensor& dst) {
    const Tensor& a = *dst.src[0];
    const Tensor& b = *dst.src[1];
    return !is_quantized(a.type) && a.ne[0] > 0 && a.ne[1] > 0 && b.ne[1] > kDotTileMaxColumns && b.ne[2] * b.ne[3] > 0;
}

size_t mul_mat_packed_work_size(const Tensor& dst, int nth) {
    if (const Bf16GemmKernel* bf16 = bf16_kernel_for(dst)) return work_size(PackedPlan<Bf16Panels>(dst, {bf16}), nth);
    return work_size(PackedPlan<F32Panels>(dst, {matmul_tiles().gemm}), nth);
}

void compute_mul_mat_packed(const ComputeParams& params, Tensor& dst) {
    if (const Bf16GemmKernel* bf16 = bf16_kernel_for(dst)) {
        compute_packed(params, dst, PackedPlan<Bf16Panels>(dst, {bf16}));
    } else {
        compute_packed(params, dst, PackedPlan<F32Panels>(dst, {matmul_tiles().gemm}));
    }
}

}  // namespace xb::cpu_kernels
