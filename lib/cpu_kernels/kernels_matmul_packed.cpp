// mul_mat (f32/f16/bf16 a) with many columns of b: packed panels and the outer-product tile of
// the CPU's instruction set (GemmKernel in cpu_kernels/matmul_tiles.hpp), BLIS's loop nest.
//
// All of b is packed first, by all threads: per batch, groups of nr columns, each group one
// [K][nr] panel. Each thread then takes units of (batch, block of mc rows of a, range of column
// groups); for each chunk of kc along K it packs its block of a ([mc / mr][kc][mr], kept in L2)
// and runs the tile over every (column group, row group) pair: the group's kc x nr piece of b stays
// in L1 while the block's mr x kc panels of a stream past it. Chunks after the first add to dst.
// Rows that are not f32 (or not 4-byte aligned) are converted to f32 chunk by chunk before packing.
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

struct PackedPlan {
    GemmKernel gemm;
    int64_t k = 0;        // shared dim
    int64_t m = 0;        // rows of a = dst dim 0
    int64_t n = 0;        // rows of b = dst dim 1
    int64_t batches = 0;  // b2 * b3
    int64_t kc = 0;       // K per chunk
    int64_t chunks = 0;   // chunks along K
    int64_t mc = 0;       // rows of a per block, a multiple of mr
    int64_t groups = 0;   // groups of nr columns of b per batch
    size_t b_bytes = 0;   // packed b, at the start of the work buffer
    size_t a_bytes = 0;   // each thread's packed block of a
    size_t scratch_bytes = 0;  // each thread's rows converted to f32 (one chunk of a panel)
};

PackedPlan make_plan(const Tensor& dst) {
    const Tensor& a = *dst.src[0];
    const Tensor& b = *dst.src[1];
    PackedPlan p;
    p.gemm = matmul_tiles().gemm;
    p.k = a.ne[0];
    p.m = a.ne[1];
    p.n = b.ne[1];
    p.batches = b.ne[2] * b.ne[3];
    const int64_t kc_max = kBPieceBytes / static_cast<int64_t>(sizeof(float) * p.gemm.nr);
    p.chunks = std::max<int64_t>(1, ceil_div(p.k, kc_max));
    p.kc = ceil_div(p.k, p.chunks);  // chunks of nearly equal length
    const int64_t mr = p.gemm.mr;
    const int64_t mc_max = std::max<int64_t>(1, kABlockBytes / static_cast<int64_t>(sizeof(float) * p.kc) / mr) * mr;
    p.mc = std::min(mc_max, ceil_div(p.m, mr) * mr);
    p.groups = ceil_div(p.n, p.gemm.nr);
    p.b_bytes = work_align_up(static_cast<size_t>(p.batches * p.groups * p.k * p.gemm.nr) * sizeof(float));
    p.a_bytes = work_align_up(static_cast<size_t>(p.mc * p.kc) * sizeof(float));
    p.scratch_bytes = work_align_up(static_cast<size_t>(std::max(p.gemm.mr, p.gemm.nr) * p.kc) * sizeof(float));
    return p;
}

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

// Where the [K][nr] panel of column group g of batch `batch` starts in the packed b.
int64_t b_panel_offset(const PackedPlan& plan, int64_t batch, int64_t g) {
    return (batch * plan.groups + g) * plan.k * plan.gemm.nr;
}

// Packs every column group of b, chunk by chunk; threads split (batch, group, chunk) units.
void pack_b(const ComputeParams& params, const Tensor& b, const PackedPlan& plan, float* out, float* scratch) {
    const int nr = plan.gemm.nr;
    const auto [u0, u1] = params.split(plan.batches * plan.groups * plan.chunks);
    for (int64_t u = u0; u < u1; ++u) {
        const int64_t chunk = u % plan.chunks;
        const int64_t g = (u / plan.chunks) % plan.groups;
        const int64_t batch = u / plan.chunks / plan.groups;
        const int64_t k0 = chunk * plan.kc;
        const int64_t len = std::min(plan.kc, plan.k - k0);
        const float* rows[kMaxPanelRows];
        chunk_rows(b, g * nr, std::min<int64_t>(nr, plan.n - g * nr), nr, batch % b.ne[2], batch / b.ne[2], k0, len,
                   scratch, rows);
        plan.gemm.pack(rows, nr, len, out + b_panel_offset(plan, batch, g) + k0 * nr);
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

Units make_units(const PackedPlan& plan, int nth) {
    Units u{ceil_div(plan.m, plan.mc), 1, plan.groups};
    const int64_t base = u.m_blocks * plan.batches;
    const int64_t want = nth > 1 ? 4 * static_cast<int64_t>(nth) : 1;
    if (base >= want) return u;
    u.per_range = ceil_div(plan.groups, std::min(plan.groups, ceil_div(want, base)));
    u.n_ranges = ceil_div(plan.groups, u.per_range);
    return u;
}

struct PackedJob {
    const Tensor* a;
    const Tensor* b;
    Tensor* dst;
    const PackedPlan* plan;
    const float* b_packed;
    float* a_block;  // this thread's packed block of a
    float* scratch;  // this thread's conversion rows
};

// One tile of dst at (row m0, column n0) of matrix (i2, i3) from packed panels: straight into dst
// when the tile is whole and dst's columns are packed floats, else through a local tile of which
// only the valid part is stored.
void run_tile(const PackedJob& job, int64_t len, const float* a, const float* b, int64_t m0, int64_t rows,
              int64_t n0, int64_t cols, int64_t i2, int64_t i3, bool accumulate) {
    const GemmKernel& gemm = job.plan->gemm;
    Tensor& dst = *job.dst;
    if (rows == gemm.mr && cols == gemm.nr && dst.nb[0] == sizeof(float) && dst.nb[1] % sizeof(float) == 0) {
        auto* c = reinterpret_cast<float*>(dst.element_ptr(m0, n0, i2, i3));
        gemm.tile(len, a, b, c, static_cast<int64_t>(dst.nb[1] / sizeof(float)), accumulate);
        return;
    }
    float tile[kMaxPanelRows * kMaxPanelRows];
    gemm.tile(len, a, b, tile, gemm.mr, false);
    for (int64_t j = 0; j < cols; ++j) {
        for (int64_t i = 0; i < rows; ++i) {
            auto* d = reinterpret_cast<float*>(dst.element_ptr(m0 + i, n0 + j, i2, i3));
            const float v = tile[j * gemm.mr + i];
            *d = accumulate ? *d + v : v;
        }
    }
}

void run_unit(const PackedJob& job, int64_t batch, int64_t m_block, int64_t g0, int64_t g1) {
    const Tensor& a = *job.a;
    const Tensor& b = *job.b;
    const PackedPlan& plan = *job.plan;
    const int mr = plan.gemm.mr;
    const int nr = plan.gemm.nr;
    const int64_t m0 = m_block * plan.mc;
    const int64_t rows = std::min(plan.mc, plan.m - m0);
    const int64_t row_groups = ceil_div(rows, mr);
    const int64_t i2 = batch % b.ne[2];
    const int64_t i3 = batch / b.ne[2];
    const int64_t i02 = i2 / (b.ne[2] / a.ne[2]);
    const int64_t i03 = i3 / (b.ne[3] / a.ne[3]);
    for (int64_t k0 = 0; k0 < plan.k; k0 += plan.kc) {
        const int64_t len = std::min(plan.kc, plan.k - k0);
        for (int64_t rg = 0; rg < row_groups; ++rg) {
            const float* src[kMaxPanelRows];
            chunk_rows(a, m0 + rg * mr, std::min<int64_t>(mr, rows - rg * mr), mr, i02, i03, k0, len, job.scratch, src);
            plan.gemm.pack(src, mr, len, job.a_block + rg * len * mr);
        }
        for (int64_t g = g0; g < g1; ++g) {
            const float* b_piece = job.b_packed + b_panel_offset(plan, batch, g) + k0 * nr;
            const int64_t cols = std::min<int64_t>(nr, plan.n - g * nr);
            for (int64_t rg = 0; rg < row_groups; ++rg) {
                run_tile(job, len, job.a_block + rg * len * mr, b_piece, m0 + rg * mr,
                         std::min<int64_t>(mr, rows - rg * mr), g * nr, cols, i2, i3, k0 > 0);
            }
        }
    }
}

}  // namespace

bool mul_mat_packed_applies(const Tensor& dst) {
    const Tensor& a = *dst.src[0];
    const Tensor& b = *dst.src[1];
    return !is_quantized(a.type) && a.ne[0] > 0 && a.ne[1] > 0 && b.ne[1] > kDotTileMaxColumns && b.ne[2] * b.ne[3] > 0;
}

size_t mul_mat_packed_work_size(const Tensor& dst, int nth) {
    const PackedPlan plan = make_plan(dst);
    return plan.b_bytes + static_cast<size_t>(std::max(nth, 1)) * (plan.a_bytes + plan.scratch_bytes) + kWorkAlign;
}

void compute_mul_mat_packed(const ComputeParams& params, Tensor& dst) {
    const PackedPlan plan = make_plan(dst);
    std::byte* work = params.aligned_work();
    auto* b_packed = reinterpret_cast<float*>(work);
    std::byte* mine = work + plan.b_bytes + static_cast<size_t>(params.ith) * (plan.a_bytes + plan.scratch_bytes);
    auto* a_block = reinterpret_cast<float*>(mine);
    auto* scratch = reinterpret_cast<float*>(mine + plan.a_bytes);
    pack_b(params, *dst.src[1], plan, b_packed, scratch);
    params.barrier();  // every thread reads column groups packed by the others

    const PackedJob job{dst.src[0], dst.src[1], &dst, &plan, b_packed, a_block, scratch};
    const Units units = make_units(plan, params.nth);
    const auto [u0, u1] = params.split(units.count(plan.batches));
    for (int64_t u = u0; u < u1; ++u) {
        const int64_t m_block = u % units.m_blocks;
        const int64_t range = (u / units.m_blocks) % units.n_ranges;
        const int64_t batch = u / units.m_blocks / units.n_ranges;
        const int64_t g0 = range * units.per_range;
        run_unit(job, batch, m_block, g0, std::min(plan.groups, g0 + units.per_range));
    }
}

}  // namespace xb::cpu_kernels
