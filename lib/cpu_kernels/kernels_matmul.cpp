// Matrix products: mul_mat (dst = b a^T per batch) and out_prod.
//
// With many columns of b, mul_mat goes to kernels_matmul_packed.cpp. With few, it packs b (converted to f32, rows padded to the vector width) into the shared work buffer
// once, then every thread takes a contiguous share of (batch, column chunk, block of kMr rows of a)
// units. For each L2-sized panel of columns of b and each L1-sized chunk of K, a thread walks its
// row blocks: it converts the chunk of its kMr rows of a to f32 (unless they are usable in place)
// and runs a register-blocked dot-product tile (kMr rows x up to the table's columns) against the
// panel; the tiles come from the table of the CPU's instruction set (cpu_kernels/matmul_tiles.hpp). A
// single column of b (one token) goes through the row kernels' dot products instead (gemv).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>

#include "cpu_kernels/gemv_rows.hpp"
#include "cpu_kernels/kernels.hpp"
#include "cpu_kernels/matmul_tiles.hpp"
#include "cpu_kernels/row_kernels.hpp"

namespace xb::cpu_kernels {

namespace {

constexpr int kMr = kTileRows;

// Longest K chunk: kMr rows of a (16 KiB) stay in L1 while the columns of b stream past them.
constexpr int64_t kKcMax = 1024;
// Bytes of one panel chunk of b (columns x K chunk): well inside L2, so that every row block of a
// finds the panel there.
constexpr int64_t kBPanelBytes = 512 * 1024;

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

using Tile = MatmulTile;

// --- mul_mat plan --------------------------------------------------------------------------------

// A source can be read in place when its rows are packed floats a whole number of vectors long
// (the tile kernel has no K tail).
bool usable_in_place(const Tensor& t) { return f32_rows_in_place(t) && t.ne[0] % matmul_tiles().width == 0; }

// Loop nest (per thread): panels of nc columns of b > chunks of kc along K > the thread's blocks of
// kMr rows of a > tiles of the table's columns. A panel chunk of b (<= kBPanelBytes) stays in L2 while the
// thread's rows pass by; one chunk of kMr rows of a stays in L1 while the panel's columns pass by.
struct MatMulPlan {
    int64_t k = 0;        // shared dim
    int64_t kp = 0;       // k rounded up to the vector width: the length of packed rows
    int64_t kc = 0;       // K chunk (a multiple of the vector width)
    int64_t nc = 0;       // columns of b per panel (a multiple of the tile's columns)
    int64_t m = 0;        // rows of a = dst dim 0
    int64_t n = 0;        // rows of b = dst dim 1
    int64_t batches = 0;  // b2 * b3
    bool pack_a = false;
    bool pack_b = false;
    size_t b_bytes = 0;   // packed b at the start of the work buffer
    size_t a_slice = 0;   // bytes of each thread's packed chunk of kMr rows of a
    // The one-token product of bf16 weights on the bf16 kernel (gemv_bf16): each thread's column
    // of b rounded to bf16.
    const Bf16GemmKernel* bf16_gemv = nullptr;
    size_t bf16_column = 0;
};

MatMulPlan make_plan(const Tensor& dst) {
    const Tensor& a = *dst.src[0];
    const Tensor& b = *dst.src[1];
    const int64_t width = matmul_tiles().width;
    const int64_t cols = matmul_tiles().cols;
    MatMulPlan p;
    p.k = a.ne[0];
    p.kp = round_up(p.k, width);
    const int64_t k_chunks = std::max<int64_t>(1, (p.kp + kKcMax - 1) / kKcMax);
    p.kc = std::max(width, round_up((p.kp + k_chunks - 1) / k_chunks, width));
    p.nc = std::max<int64_t>(1, kBPanelBytes / (p.kc * static_cast<int64_t>(sizeof(float))) / cols) * cols;
    p.m = a.ne[1];
    p.n = b.ne[1];
    p.batches = b.ne[2] * b.ne[3];
    p.pack_a = !usable_in_place(a);
    p.pack_b = !usable_in_place(b);
    p.b_bytes = p.pack_b ? work_align_up(static_cast<size_t>(p.n * p.batches * p.kp) * sizeof(float)) : 0;
    p.a_slice = p.pack_a ? work_align_up(static_cast<size_t>(kMr * p.kc) * sizeof(float)) : 0;
    if (p.n == 1 && a.type == DType::BF16 && a.nb[0] == sizeof(uint16_t)) {
        p.bf16_gemv = bf16_gemm_kernel();
        if (p.bf16_gemv != nullptr) p.bf16_column = work_align_up(static_cast<size_t>(p.k) * sizeof(uint16_t));
    }
    return p;
}

// Converts every row of b to f32 (rows of kp floats, ordered n, then b2, then b3); threads split rows.
void pack_b(const ComputeParams& params, const Tensor& b, const MatMulPlan& plan, float* out) {
    const auto [r0, r1] = params.split(plan.n * plan.batches);
    for (int64_t r = r0; r < r1; ++r) {
        const int64_t i1 = r % plan.n;
        const int64_t i2 = (r / plan.n) % b.ne[2];
        const int64_t i3 = r / plan.n / b.ne[2];
        load_row_f32(b.type, b.element_ptr(0, i1, i2, i3), b.nb[0], plan.k, plan.kp, out + r * plan.kp);
    }
}

// Work is cut into units of (batch, column chunk, block of kMr rows of a), row block fastest.
struct Units {
    int64_t m_blocks;  // blocks of kMr rows of a
    int64_t n_chunks;  // chunks of columns of b
    int64_t n_chunk;   // columns per chunk (a multiple of the tile's columns unless it is all of N)
    int64_t per_batch() const { return m_blocks * n_chunks; }
};

// Splits columns only when rows and batches alone leave too few units to balance the threads.
Units make_units(const MatMulPlan& plan, int nth) {
    const int64_t cols = matmul_tiles().cols;
    Units u{(plan.m + kMr - 1) / kMr, 1, plan.n};
    const int64_t base = u.m_blocks * plan.batches;
    const int64_t want = nth > 1 ? 8 * static_cast<int64_t>(nth) : 1;
    if (base >= want || plan.n <= cols) return u;
    const int64_t max_chunks = (plan.n + cols - 1) / cols;
    const int64_t chunks = std::min(max_chunks, (want + base - 1) / base);
    u.n_chunk = round_up((plan.n + chunks - 1) / chunks, cols);
    u.n_chunks = (plan.n + u.n_chunk - 1) / u.n_chunk;
    return u;
}

// Everything a thread needs to compute its units.
struct MatMulJob {
    const Tensor* a;
    const Tensor* b;
    Tensor* dst;
    const MatMulPlan* plan;
    const float* b_packed;  // nullptr: read b in place
    float* a_scratch;       // this thread's chunk of rows of a (when packing)
};

// One unit restricted to a panel and a K chunk.
struct Block {
    int64_t m0;      // first row of a
    int64_t n0, n1;  // columns of b
    int64_t k0, k1;  // K range (k1 <= kp)
    int64_t i2, i3;  // batch of b and dst
};

// Pointers to k0 of the kMr rows of a starting at row m0 of matrix (i02, i03); rows past the end
// repeat a valid row (their results are discarded).
void rows_of_a(const MatMulJob& job, const Block& blk, int64_t i02, int64_t i03, const float* (&rows)[kMr]) {
    const Tensor& a = *job.a;
    const MatMulPlan& plan = *job.plan;
    const int64_t valid = std::min<int64_t>(kMr, plan.m - blk.m0);
    const int64_t len = blk.k1 - blk.k0;
    for (int i = 0; i < kMr; ++i) {
        const int64_t r = std::min<int64_t>(i, valid - 1);
        const std::byte* src = a.element_ptr(blk.k0, blk.m0 + r, i02, i03);
        if (plan.pack_a) {
            float* row = job.a_scratch + r * len;
            if (i < valid) load_row_f32(a.type, src, a.nb[0], std::min(plan.k, blk.k1) - blk.k0, len, row);
            rows[i] = row;
        } else {
            rows[i] = reinterpret_cast<const float*>(src);
        }
    }
}

// Column n of b (a row of src1) from k0 on.
const float* column_of_b(const MatMulJob& job, int64_t n, int64_t k0, int64_t i2, int64_t i3) {
    const MatMulPlan& plan = *job.plan;
    if (job.b_packed != nullptr) {
        return job.b_packed + ((i3 * job.b->ne[2] + i2) * plan.n + n) * plan.kp + k0;
    }
    return reinterpret_cast<const float*>(job.b->element_ptr(k0, n, i2, i3));
}

// dst[m0 + i, n0 + j] (+)= tile[j][i] for the valid part of the tile.
void store_tile(const MatMulJob& job, const Tile& tile, const Block& blk, int64_t mr, int64_t n0, int64_t nr) {
    const bool accumulate = blk.k0 > 0;
    for (int64_t j = 0; j < nr; ++j) {
        for (int64_t i = 0; i < mr; ++i) {
            auto* d = reinterpret_cast<float*>(job.dst->element_ptr(blk.m0 + i, n0 + j, blk.i2, blk.i3));
            *d = accumulate ? *d + tile[j][i] : tile[j][i];
        }
    }
}

void run_block(const MatMulJob& job, const Block& blk) {
    const MatMulPlan& plan = *job.plan;
    const int64_t i02 = blk.i2 / (job.b->ne[2] / job.a->ne[2]);
    const int64_t i03 = blk.i3 / (job.b->ne[3] / job.a->ne[3]);
    const float* a_rows[kMr];
    rows_of_a(job, blk, i02, i03, a_rows);
    const int64_t mr = std::min<int64_t>(kMr, plan.m - blk.m0);
    const MatmulTiles& table = matmul_tiles();
    Tile tile;
    for (int64_t n = blk.n0; n < blk.n1; n += table.cols) {
        const int64_t nr = std::min<int64_t>(table.cols, blk.n1 - n);
        const float* b_cols[kMaxTileCols];
        for (int64_t j = 0; j < nr; ++j) b_cols[j] = column_of_b(job, n + j, blk.k0, blk.i2, blk.i3);
        table.tile[nr - 1](a_rows, b_cols, blk.k1 - blk.k0, tile);
        store_tile(job, tile, blk, mr, n, nr);
    }
}

// A single column of b per batch (decoding one token): one dot product per row of a read in its
// stored type by the row kernels (f32, f16 or bf16), so that a streams past once instead of being
// converted to f32 first; R rows of one matrix at a time share each load of b's column, R chosen
// from the machine (gemv_rows.hpp). False when a's rows are of another type or not packed.
struct GemvDots {
    RowKernels::DotFn one;
    RowKernels::DotRowsFn rows;  // nullptr: one row at a time
    int64_t count;               // rows per call of `rows`
};
std::optional<GemvDots> gemv_dots(const Tensor& a) {
    const std::optional<RowType> rt = row_type(a.type);
    if (!rt || a.nb[0] != type_size(a.type)) return std::nullopt;
    const RowKernels& table = row_kernels();
    const int type = static_cast<int>(*rt);
    const int walk = gemv_walk().rows_for(a.ne[0]);
    for (int slot = 0; slot < kDotRowsKinds; ++slot) {
        if (dot_rows_count(slot) == walk) return GemvDots{table.dot[type], table.dot_rows[type][slot], walk};
    }
    return GemvDots{table.dot[type], nullptr, 1};
}

// Walks this thread's share of the rows of dst (all batches) in runs of `count` rows of one
// matrix where dst's rows are packed floats and the run fits, else single rows: calls
// dots(column of b, first row of a, rows, out) with the batch's f32 column of b.
template <class Dots>
void walk_gemv_rows(const ComputeParams& params, const MatMulJob& job, int64_t count, Dots dots) {
    const Tensor& a = *job.a;
    const Tensor& b = *job.b;
    const MatMulPlan& plan = *job.plan;
    const auto [r0, r1] = params.split(plan.m * plan.batches);
    const bool dst_packed = job.dst->nb[0] == sizeof(float);
    for (int64_t r = r0; r < r1;) {
        const int64_t m = r % plan.m;
        const int64_t i2 = (r / plan.m) % b.ne[2];
        const int64_t i3 = r / plan.m / b.ne[2];
        const int64_t i02 = i2 / (b.ne[2] / a.ne[2]);
        const int64_t i03 = i3 / (b.ne[3] / a.ne[3]);
        const int64_t rows = dst_packed && r + count <= r1 && m + count <= plan.m ? count : 1;
        dots(column_of_b(job, 0, 0, i2, i3), a.element_ptr(0, m, i02, i03), rows,
             reinterpret_cast<float*>(job.dst->element_ptr(m, 0, i2, i3)));
        r += rows;
    }
}

void gemv(const ComputeParams& params, const MatMulJob& job, const GemvDots& dots) {
    const int64_t k = job.plan->k;
    const size_t stride = job.a->nb[1];
    walk_gemv_rows(params, job, dots.rows != nullptr ? dots.count : 1,
                   [&](const float* column, const std::byte* first, int64_t rows, float* out) {
                       if (rows > 1) return dots.rows(column, first, stride, k, out);  // R rows of one matrix
                       *out = dots.one(column, first, k);
                   });
}

// The one-token product of bf16 weights where the CPU has AVX512-BF16: as ggml's CPU (and as the
// bf16 prefill tile here), the column of b rounded to bf16, then one vdpbf16ps per 32 weights,
// two products a lane, where the row kernels widen each weight to f32 for an FMA with the f32
// activations: half the vector instructions per weight byte, which a decode needs where memory is
// fast (the 1B BF16 decode at 0.77x llama.cpp's on the Zen 4 VM when 2 threads read 48 GB/s).
// Each thread rounds the column of the batch it is in into its own scratch.
void gemv_bf16(const ComputeParams& params, const MatMulJob& job, uint16_t* column_bf16) {
    const int64_t k = job.plan->k;
    const size_t stride = job.a->nb[1];
    const Bf16GemmKernel& kernel = *job.plan->bf16_gemv;
    const float* rounded = nullptr;  // the f32 column now in column_bf16
    walk_gemv_rows(params, job, gemv_walk().rows_for(k),
                   [&](const float* column, const std::byte* first, int64_t rows, float* out) {
                       if (column != rounded) {
                           f32_to_bf16_row(column, column_bf16, k);
                           rounded = column;
                       }
                       kernel.dot_rows(column_bf16, first, stride, k, static_cast<int>(rows), out);
                   });
}

// An empty sum (K == 0): zeros; threads split rows of dst.
void zero_dst(const ComputeParams& params, Tensor& dst) {
    const auto [r0, r1] = params.split(dst.nrows());
    for (int64_t r = r0; r < r1; ++r) {
        const int64_t i1 = r % dst.ne[1];
        const int64_t i2 = (r / dst.ne[1]) % dst.ne[2];
        const int64_t i3 = r / dst.ne[1] / dst.ne[2];
        for (int64_t i0 = 0; i0 < dst.ne[0]; ++i0) *reinterpret_cast<float*>(dst.element_ptr(i0, i1, i2, i3)) = 0.0f;
    }
}

// --- out_prod ------------------------------------------------------------------------------------

// dst row (j, i2, i3) = sum_l b[j, l] * a[:, l] over matrix (i02, i03) of a.
void out_prod_row(const Tensor& a, const Tensor& b, Tensor& dst, int64_t j, int64_t i2, int64_t i3) {
    const int64_t m = dst.ne[0];
    const int64_t i02 = i2 / (b.ne[2] / a.ne[2]);
    const int64_t i03 = i3 / (b.ne[3] / a.ne[3]);
    const bool fast = a.type == DType::F32 && a.nb[0] == sizeof(float) && dst.nb[0] == sizeof(float);
    auto* out = reinterpret_cast<float*>(dst.element_ptr(0, j, i2, i3));
    for (int64_t i = 0; i < m; ++i) *reinterpret_cast<float*>(dst.element_ptr(i, j, i2, i3)) = 0.0f;
    for (int64_t l = 0; l < a.ne[1]; ++l) {
        const float bv = load_as_f32(b.type, b.element_ptr(j, l, i2, i3));
        if (fast) {
            const auto* ar = reinterpret_cast<const float*>(a.element_ptr(0, l, i02, i03));
            for (int64_t i = 0; i < m; ++i) out[i] += ar[i] * bv;
        } else {
            for (int64_t i = 0; i < m; ++i) {
                auto* d = reinterpret_cast<float*>(dst.element_ptr(i, j, i2, i3));
                *d += load_as_f32(a.type, a.element_ptr(i, l, i02, i03)) * bv;
            }
        }
    }
}

}  // namespace

size_t mul_mat_work_size(const Tensor& dst, int nth) {
    if (is_quantized(dst.src[0]->type)) return mul_mat_quant_work_size(dst, nth);
    if (mul_mat_packed_applies(dst)) return mul_mat_packed_work_size(dst, nth);
    const MatMulPlan plan = make_plan(dst);
    return plan.b_bytes + static_cast<size_t>(std::max(nth, 1)) * (plan.a_slice + plan.bf16_column) + kWorkAlign;
}

void compute_mul_mat(const ComputeParams& params, Tensor& dst) {
    if (is_quantized(dst.src[0]->type)) return compute_mul_mat_quant(params, dst);
    if (mul_mat_packed_applies(dst)) return compute_mul_mat_packed(params, dst);
    const Tensor& a = *dst.src[0];
    const Tensor& b = *dst.src[1];
    const MatMulPlan plan = make_plan(dst);
    std::byte* work = params.aligned_work();
    float* b_packed = plan.pack_b ? reinterpret_cast<float*>(work) : nullptr;
    if (plan.pack_b) {
        pack_b(params, b, plan, b_packed);
        params.barrier();  // every thread reads columns packed by the others
    }
    if (plan.m == 0 || plan.n == 0 || plan.batches == 0) return;
    if (plan.k == 0) {
        zero_dst(params, dst);
        return;
    }
    float* a_scratch = plan.pack_a ? reinterpret_cast<float*>(work + plan.b_bytes + params.ith * plan.a_slice) : nullptr;
    const MatMulJob job{&a, &b, &dst, &plan, b_packed, a_scratch};
    if (plan.bf16_gemv != nullptr) {
        std::byte* column = work + plan.b_bytes + static_cast<size_t>(params.nth) * plan.a_slice + params.ith * plan.bf16_column;
        return gemv_bf16(params, job, reinterpret_cast<uint16_t*>(column));
    }
    if (plan.n == 1) {
        if (const std::optional<GemvDots> dots = gemv_dots(a)) return gemv(params, job, *dots);
    }

    const Units units = make_units(plan, params.nth);
    const auto [u0, u1] = params.split(units.per_batch() * plan.batches);
    for (int64_t p0 = 0; p0 < plan.n; p0 += plan.nc) {
        for (int64_t k0 = 0; k0 < plan.kp; k0 += plan.kc) {
            for (int64_t u = u0; u < u1; ++u) {
                const int64_t mb = u % units.m_blocks;
                const int64_t nc = (u / units.m_blocks) % units.n_chunks;
                const int64_t batch = u / units.per_batch();
                Block blk{};
                blk.m0 = mb * kMr;
                blk.n0 = std::max(p0, nc * units.n_chunk);
                blk.n1 = std::min({plan.n, (nc + 1) * units.n_chunk, p0 + plan.nc});
                blk.k0 = k0;
                blk.k1 = std::min(plan.kp, k0 + plan.kc);
                blk.i2 = batch % b.ne[2];
                blk.i3 = batch / b.ne[2];
                if (blk.n0 < blk.n1) run_block(job, blk);
            }
        }
    }
}

void compute_out_prod(const ComputeParams& params, Tensor& dst) {
    const Tensor& a = *dst.src[0];
    const Tensor& b = *dst.src[1];
    const auto [r0, r1] = params.split(dst.nrows());
    for (int64_t r = r0; r < r1; ++r) {
        const int64_t j = r % dst.ne[1];
        const int64_t i2 = (r / dst.ne[1]) % dst.ne[2];
        const int64_t i3 = r / dst.ne[1] / dst.ne[2];
        out_prod_row(a, b, dst, j, i2, i3);
    }
}

}  // namespace xb::cpu_kernels
