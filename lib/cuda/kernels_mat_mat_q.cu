// Quantized weights times many columns (prefill): tiles of the weights are decoded to f16 in shared
// memory, piece by piece with core/quant_blocks.hpp's dequantize_part (the CPU's own values), and
// multiplied with f16 tiles of b on the tensor cores (WMMA, f32 accumulators). No copy of the whole
// weight matrix is ever made: a thread block holds one 128 x 32 tile of it at a time.
#include <cuda_fp16.h>
#include <mma.h>

#include <algorithm>
#include <limits>

#include "cuda/cuda_check.hpp"
#include "cuda/expert_products.hpp"
#include "cuda/kernel_common.cuh"
#include "cuda/kernels.hpp"
#include "cuda/quant_products.hpp"
#include "cuda/quant_types.cuh"

namespace xb::cuda {

namespace {

namespace wmma = nvcuda::wmma;

constexpr int kTileM = kTileWeightRows;    // weight rows (dst's dim 0) per thread block
constexpr int kTileN = kTileColumns;       // columns of b per thread block
constexpr int kTileK = 32;                 // the k step: one decoded piece pair per row
constexpr int kTileLd = kTileK + 8;        // padded rows of the shared tiles (halves), against bank conflicts
constexpr int kTileWarps = 8;              // 4 x 2 warps, each 32 x 32 of the tile
constexpr int kTileThreads = kTileWarps * kWarpSize;
constexpr int kFrag = 16;                  // WMMA's m = n = k

static_assert(kTileM * kTileK == kTileThreads * 16, "each thread decodes one 16-value piece per k step");
static_assert(kTileN * kTileK == kTileThreads * 8, "each thread converts eight values of b per k step");

struct TileShared {
    __half a[2][kTileM][kTileLd];  // two stages: one computed on while the next is written
    __half b[2][kTileN][kTileLd];  // b's tile column by column (WMMA's col_major matrix_b)
    float out[kTileWarps][kFrag * kFrag];
};

struct TileArgs {
    const char* a = nullptr;
    int64_t a_nb1 = 0, a_nb2 = 0, a_nb3 = 0;
    int64_t rows = 0, columns = 0, k = 0;
    int64_t batches = 0, batch2 = 1, r2 = 1, r3 = 1;
    TensorDesc b;
    bool b_vectors = false;  // b f32 with 16-byte aligned contiguous columns: read four floats at a time
    TensorDesc dst;
};

// One weight matrix of a tile product: `rows` rows of k quantized values, `nb1` bytes apart.
struct TileWeights {
    const char* matrix;
    int64_t nb1;
    int64_t rows;
    int64_t k;
};

// The columns of b that a tile multiplies, and where their outputs go. Column n (0 .. kTileN - 1)
// of the tile is valid(n), starts at column(n) (elements b.nb[0] apart) and its output of weight
// row m goes through store(m, n, v).
// A product's columns n0 .. n0 + kTileN - 1 of batch (i2, i3):
struct DenseColumns {
    const TileArgs& args;
    int64_t n0, i2, i3;
    __device__ bool valid(int n) const { return n0 + n < args.columns; }
    __device__ const char* column(int n) const { return row_address(args.b, n0 + n, i2, i3); }
    __device__ void store(int64_t m, int n, float v) const { store_f32(args.dst, Index4{{m, n0 + n, i2, i3}}, v); }
};

// Sixteen floats as halves into 32 bytes of shared memory (16-byte aligned).
__device__ __forceinline__ void store16_half(__half* p, const float (&y)[16]) {
    uint32_t words[8];
#pragma unroll
    for (int q = 0; q < 8; ++q) {
        const __half2 h = __floats2half2_rn(y[2 * q], y[2 * q + 1]);
        words[q] = *reinterpret_cast<const uint32_t*>(&h);
    }
    reinterpret_cast<uint4*>(p)[0] = make_uint4(words[0], words[1], words[2], words[3]);
    reinterpret_cast<uint4*>(p)[1] = make_uint4(words[4], words[5], words[6], words[7]);
}

// Stage `buf` <- the k step starting at k0: thread t decodes values k0 + 16 (t % 2) .. + 15 of its
// weight row `a_row` (row t / 2 of the tile), and converts values k0 + 8 (t % 4) .. + 7 of its
// column of b, `b_column` (column t / 4 of the tile). Null rows and columns (past the matrix) are
// zeros. The row and column are found once per tile: the k steps only move along them.
template <typename Block>
__device__ __forceinline__ void load_stage(const char* a_row, const char* b_column, const TensorDesc& b, bool b_vectors,
                                           int64_t k0, TileShared& sh, int buf) {
    constexpr int kElems = kBlockElems<Block>;
    const int t = static_cast<int>(threadIdx.x);
    {
        const int64_t k = k0 + 16 * (t % 2);
        float y[16];
        if (a_row != nullptr) {
            const auto& block = *reinterpret_cast<const Block*>(a_row + (k / kElems) * static_cast<int64_t>(sizeof(Block)));
            dequantize_part(block, static_cast<int>((k % kElems) / 16), y);
        } else {
#pragma unroll
            for (float& v : y) v = 0.0f;
        }
        store16_half(&sh.a[buf][t / 2][16 * (t % 2)], y);
    }
    {
        const int64_t k = k0 + 8 * (t % 4);
        float x[8] = {};
        if (b_column != nullptr) {
            if (b_vectors) {
                const auto* p = reinterpret_cast<const float4*>(b_column + 4 * k);
                const float4 lo = p[0];
                const float4 hi = p[1];
                x[0] = lo.x, x[1] = lo.y, x[2] = lo.z, x[3] = lo.w;
                x[4] = hi.x, x[5] = hi.y, x[6] = hi.z, x[7] = hi.w;
            } else {
#pragma unroll
                for (int j = 0; j < 8; ++j) x[j] = load_as_f32(b.type, b_column + (k + j) * b.nb[0]);
            }
        }
        uint32_t words[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const __half2 h = __floats2half2_rn(x[2 * q], x[2 * q + 1]);
            words[q] = *reinterpret_cast<const uint32_t*>(&h);
        }
        *reinterpret_cast<uint4*>(&sh.b[buf][t / 4][8 * (t % 4)]) = make_uint4(words[0], words[1], words[2], words[3]);
    }
}

// The kTileM x kTileN outputs of weight rows m0.. and the tile's columns: k steps of kTileK, two
// stages, WMMA on the tensor cores; then each result within bounds through cols.store.
template <typename Block, typename Columns>
__device__ __forceinline__ void multiply_tile(const TileWeights& a, const TensorDesc& b, bool b_vectors,
                                              const Columns& cols, int64_t m0, TileShared& sh) {
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int warp_m = warp % 4;  // the warp's 32 rows of the tile
    const int warp_n = warp / 4;  // and its 32 columns
    const int64_t steps = a.k / kTileK;
    const int t = static_cast<int>(threadIdx.x);
    const char* a_row = m0 + t / 2 < a.rows ? a.matrix + (m0 + t / 2) * a.nb1 : nullptr;
    const char* b_column = cols.valid(t / 4) ? cols.column(t / 4) : nullptr;
    wmma::fragment<wmma::accumulator, kFrag, kFrag, kFrag, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
    }
    load_stage<Block>(a_row, b_column, b, b_vectors, 0, sh, 0);
    __syncthreads();
    for (int64_t step = 0; step < steps; ++step) {
        const int buf = static_cast<int>(step % 2);
        // The next stage's loads go out before this one's products: other warps' products hide
        // their latency. Its buffer was last read before the previous barrier.
        if (step + 1 < steps) load_stage<Block>(a_row, b_column, b, b_vectors, (step + 1) * kTileK, sh, buf ^ 1);
#pragma unroll
        for (int kk = 0; kk < kTileK; kk += kFrag) {
            wmma::fragment<wmma::matrix_a, kFrag, kFrag, kFrag, __half, wmma::row_major> fa[2];
            wmma::fragment<wmma::matrix_b, kFrag, kFrag, kFrag, __half, wmma::col_major> fb[2];
#pragma unroll
            for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(fa[i], &sh.a[buf][32 * warp_m + 16 * i][kk], kTileLd);
#pragma unroll
            for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[j], &sh.b[buf][32 * warp_n + 16 * j][kk], kTileLd);
#pragma unroll
            for (int i = 0; i < 2; ++i) {
#pragma unroll
                for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
            }
        }
        __syncthreads();
    }
    // Each 16 x 16 result through the warp's staging area, then out within bounds (consecutive
    // lanes, consecutive rows: dst's dim 0).
#pragma unroll
    for (int i = 0; i < 2; ++i) {
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            wmma::store_matrix_sync(sh.out[warp], acc[i][j], kFrag, wmma::mem_col_major);
            __syncwarp();
            for (int e = lane; e < kFrag * kFrag; e += kWarpSize) {
                const int64_t m = m0 + 32 * warp_m + 16 * i + e % kFrag;
                const int n = 32 * warp_n + 16 * j + e / kFrag;
                if (m < a.rows && cols.valid(n)) cols.store(m, n, sh.out[warp][e]);
            }
            __syncwarp();
        }
    }
}

// dst[m, n, i2, i3] = sum_k a(m, k) * b(k, n): block (x, y, z) computes tile x of kTileM x kTileN
// outputs (tiles numbered column tile fastest, so that the blocks running together share a weight
// tile in L2) of batch y + gridDim.y * z. One tile per block, no loop around it: a grid-stride loop
// kept its counters live through the tile's k loop and spilled up to 220 bytes of the q6_K and tq2_0
// decoders at the 128-register bound.
template <typename Block>
__global__ void __launch_bounds__(kTileThreads, 2) mul_mat_q_tiles_kernel(TileArgs args) {
    __shared__ __align__(128) TileShared sh;
    const int64_t batch = blockIdx.y + static_cast<int64_t>(gridDim.y) * blockIdx.z;
    if (batch >= args.batches) return;
    const int64_t tiles_n = (args.columns + kTileN - 1) / kTileN;
    const int64_t tile = blockIdx.x;
    const int64_t i2 = batch % args.batch2;
    const int64_t i3 = batch / args.batch2;
    const TileWeights a{args.a + (i2 / args.r2) * args.a_nb2 + (i3 / args.r3) * args.a_nb3, args.a_nb1, args.rows, args.k};
    const DenseColumns cols{args, (tile % tiles_n) * kTileN, i2, i3};
    multiply_tile<Block>(a, args.b, args.b_vectors, cols, (tile / tiles_n) * kTileM, sh);
}

struct ExpertTileArgs {
    const char* as = nullptr;  // the experts' weights [k, rows, experts]
    int64_t as_nb1 = 0, as_nb2 = 0;
    int64_t rows = 0, k = 0, experts = 0;
    int32_t n_used = 1;
    TensorDesc b;              // [k, 1 or n_used, tokens]
    bool b_vectors = false;
    TensorDesc dst;            // [rows, n_used, tokens]
    ExpertGroups groups;
};

// The columns of an expert's tile: pairs[first .. end) of the grouped pairs (p = slot + n_used *
// token): b's column of the pair's slot (or its only one) and token; outputs to dst[m, slot, token].
struct ExpertColumns {
    const ExpertTileArgs& args;
    int32_t first, end;
    __device__ bool valid(int n) const { return first + n < end; }
    __device__ int32_t pair(int n) const { return args.groups.pairs[first + n]; }
    __device__ const char* column(int n) const {
        const ExpertPair p = expert_pair(pair(n), args.n_used, args.b.ne[1]);
        return row_address(args.b, p.slot % args.b.ne[1], p.token, 0);
    }
    __device__ void store(int64_t m, int n, float v) const {
        const ExpertPair p = expert_pair(pair(n), args.n_used, args.b.ne[1]);
        store_f32(args.dst, Index4{{m, p.slot, p.token, 0}}, v);
    }
};

// mul_mat_id from pairs grouped by expert (group_expert_pairs_kernel): block (x, y) multiplies
// column tile x of all the experts' tiles with row tile y of that tile's expert. Blocks past the
// tiles the grouping counted end at once (the grid is sized for the most there can be).
template <typename Block>
__global__ void __launch_bounds__(kTileThreads, 2) mul_mat_id_tiles_kernel(ExpertTileArgs args) {
    __shared__ __align__(128) TileShared sh;
    const auto tile = static_cast<int32_t>(blockIdx.x);
    if (tile >= args.groups.tile_start[args.experts]) return;
    const int64_t e = expert_of_tile(args.groups.tile_start, args.experts, tile);
    const int32_t first = args.groups.pair_start[e] + (tile - args.groups.tile_start[e]) * kTileN;
    const ExpertColumns cols{args, first, args.groups.pair_start[e + 1]};
    const TileWeights a{args.as + e * args.as_nb2, args.as_nb1, args.rows, args.k};
    multiply_tile<Block>(a, args.b, args.b_vectors, cols, static_cast<int64_t>(blockIdx.y) * kTileM, sh);
}

}  // namespace

Status launch_mul_mat_q_tiles(const LaunchContext& ctx, const Tensor& dst, const QuantProductPlan& plan) {
    const Tensor& a = *dst.src[0];
    const Tensor& b = *dst.src[1];
    if (plan.rows == 0 || plan.columns == 0 || plan.batches == 0) return Status::ok();
    if (plan.k == 0) {
        XB_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dst.data, 0, dst.nbytes(), ctx.stream));  // an empty sum
        return Status::ok();
    }
    TileArgs args;
    args.a = static_cast<const char*>(a.data);
    args.a_nb1 = static_cast<int64_t>(a.nb[1]);
    args.a_nb2 = static_cast<int64_t>(a.nb[2]);
    args.a_nb3 = static_cast<int64_t>(a.nb[3]);
    args.rows = plan.rows;
    args.columns = plan.columns;
    args.k = plan.k;
    args.batches = plan.batches;
    args.batch2 = dst.ne[2];
    args.r2 = plan.r2;
    args.r3 = plan.r3;
    args.b = describe(b);
    args.b_vectors = b.type == DType::F32 && rows_aligned16(args.b);
    args.dst = describe(dst);
    const int64_t tiles = ((plan.rows + kTileM - 1) / kTileM) * ((plan.columns + kTileN - 1) / kTileN);
    if (tiles > std::numeric_limits<int32_t>::max()) {
        return Status(StatusCode::NotSupported, "mul_mat: too many tiles for the tile kernel");
    }
    // Batches over y and z (each at most kMaxGridYZ).
    const int64_t batches_y = std::min(plan.batches, kMaxGridYZ);
    const int64_t batches_z = (plan.batches + batches_y - 1) / batches_y;
    if (batches_z > kMaxGridYZ) return Status(StatusCode::NotSupported, "mul_mat: too many batches for the tile kernel");
    const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(batches_y), static_cast<unsigned>(batches_z));
    return launch_for_block_type(
        a.type,
        [&](auto tag) {
            mul_mat_q_tiles_kernel<typename decltype(tag)::type><<<grid, kTileThreads, 0, ctx.stream>>>(args);
            return true;
        },
        StatusCode::NotSupported, "mul_mat: no tile kernel for ");
}

Status launch_mul_mat_id_tiles(const LaunchContext& ctx, const Tensor& dst, const ExpertProductPlan& plan,
                               const ExpertGroups& groups) {
    const Tensor& as = *dst.src[0];
    const Tensor& b = *dst.src[1];
    ExpertTileArgs args;
    args.as = static_cast<const char*>(as.data);
    args.as_nb1 = static_cast<int64_t>(as.nb[1]);
    args.as_nb2 = static_cast<int64_t>(as.nb[2]);
    args.rows = as.ne[1];
    args.k = as.ne[0];
    args.experts = plan.experts;
    args.n_used = static_cast<int32_t>(dst.src[2]->ne[0]);
    args.b = describe(b);
    args.b_vectors = b.type == DType::F32 && rows_aligned16(args.b);
    args.dst = describe(dst);
    args.groups = groups;
    const int64_t row_tiles = (args.rows + kTileM - 1) / kTileM;
    if (plan.max_tiles > std::numeric_limits<int32_t>::max() || row_tiles > kMaxGridYZ) {
        return Status(StatusCode::NotSupported, "mul_mat_id: too many tiles for the expert tile kernel");
    }
    const dim3 grid(static_cast<unsigned>(plan.max_tiles), static_cast<unsigned>(row_tiles), 1);
    return launch_for_block_type(
        as.type,
        [&](auto tag) {
            mul_mat_id_tiles_kernel<typename decltype(tag)::type><<<grid, kTileThreads, 0, ctx.stream>>>(args);
            return true;
        },
        StatusCode::NotSupported, "mul_mat_id: no tile kernel for ");
}

}  // namespace xb::cuda
