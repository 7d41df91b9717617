// Quantized weights times many columns (prefill): tiles of the weights are decoded to f16 in shared
// memory, piece by piece with core/quant_blocks.hpp's dequantize_part (the CPU's own values), and
// multiplied with f16 tiles of b on the tensor cores (WMMA, f32 accumulators). No copy of the whole
// weight matrix is ever made: a thread block holds one 128 x 32 tile of it at a time.
#include <cuda_fp16.h>
#include <mma.h>

#include "cuda/cuda_check.hpp"
#include "cuda/kernel_common.cuh"
#include "cuda/kernels.hpp"
#include "cuda/quant_products.hpp"
#include "cuda/quant_types.cuh"

namespace xb::cuda {

namespace {

namespace wmma = nvcuda::wmma;

constexpr int kTileM = 128;                // weight rows (dst's dim 0) per thread block
constexpr int kTileN = 64;                 // columns of b per thread block
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

// Stage `buf` <- the k step starting at k0: thread t decodes values k0 + 16 (t % 2) .. + 15 of
// weight row m0 + t / 2, and converts values k0 + 8 (t % 4) .. + 7 of column n0 + t / 4 of b.
// Rows and columns past the matrix are zeros.
template <typename Block>
__device__ __forceinline__ void load_stage(const TileArgs& args, const char* matrix, int64_t m0, int64_t n0,
                                           int64_t i2, int64_t i3, int64_t k0, TileShared& sh, int buf) {
    constexpr int kElems = kBlockElems<Block>;
    const int t = static_cast<int>(threadIdx.x);
    {
        const int r = t / 2;
        const int64_t k = k0 + 16 * (t % 2);
        float y[16];
        if (m0 + r < args.rows) {
            const auto& block = *reinterpret_cast<const Block*>(matrix + (m0 + r) * args.a_nb1 +
                                                                (k / kElems) * static_cast<int64_t>(sizeof(Block)));
            dequantize_part(block, static_cast<int>((k % kElems) / 16), y);
        } else {
#pragma unroll
            for (float& v : y) v = 0.0f;
        }
        store16_half(&sh.a[buf][r][16 * (t % 2)], y);
    }
    {
        const int n = t / 4;
        const int64_t k = k0 + 8 * (t % 4);
        float x[8] = {};
        if (n0 + n < args.columns) {
            if (args.b_vectors) {
                const auto* p = reinterpret_cast<const float4*>(row_address(args.b, n0 + n, i2, i3) + 4 * k);
                const float4 lo = p[0];
                const float4 hi = p[1];
                x[0] = lo.x, x[1] = lo.y, x[2] = lo.z, x[3] = lo.w;
                x[4] = hi.x, x[5] = hi.y, x[6] = hi.z, x[7] = hi.w;
            } else {
#pragma unroll
                for (int j = 0; j < 8; ++j) x[j] = load_f32(args.b, Index4{{k + j, n0 + n, i2, i3}});
            }
        }
        uint32_t words[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const __half2 h = __floats2half2_rn(x[2 * q], x[2 * q + 1]);
            words[q] = *reinterpret_cast<const uint32_t*>(&h);
        }
        *reinterpret_cast<uint4*>(&sh.b[buf][n][8 * (t % 4)]) = make_uint4(words[0], words[1], words[2], words[3]);
    }
}

// dst[m, n, i2, i3] = sum_k a(m, k) * b(k, n) over tiles of kTileM x kTileN outputs; tiles are
// numbered column tile fastest, so that the blocks running together share a weight tile in L2.
template <typename Block>
__global__ void __launch_bounds__(kTileThreads, 2) mul_mat_q_tiles_kernel(TileArgs args) {
    __shared__ __align__(128) TileShared sh;
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int warp_m = warp % 4;  // the warp's 32 rows of the tile
    const int warp_n = warp / 4;  // and its 32 columns
    const int64_t tiles_n = (args.columns + kTileN - 1) / kTileN;
    const int64_t tiles = tiles_n * ((args.rows + kTileM - 1) / kTileM);
    const int64_t steps = args.k / kTileK;

    for (int64_t batch = blockIdx.z; batch < args.batches; batch += gridDim.z) {
        const int64_t i2 = batch % args.batch2;
        const int64_t i3 = batch / args.batch2;
        const char* matrix = args.a + (i2 / args.r2) * args.a_nb2 + (i3 / args.r3) * args.a_nb3;
        for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            const int64_t m0 = (tile / tiles_n) * kTileM;
            const int64_t n0 = (tile % tiles_n) * kTileN;
            wmma::fragment<wmma::accumulator, kFrag, kFrag, kFrag, float> acc[2][2];
#pragma unroll
            for (int i = 0; i < 2; ++i) {
#pragma unroll
                for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
            }
            load_stage<Block>(args, matrix, m0, n0, i2, i3, 0, sh, 0);
            __syncthreads();
            for (int64_t step = 0; step < steps; ++step) {
                const int buf = static_cast<int>(step % 2);
                // The next stage's loads go out before this one's products: other warps' products
                // hide their latency. Its buffer was last read before the previous barrier.
                if (step + 1 < steps) load_stage<Block>(args, matrix, m0, n0, i2, i3, (step + 1) * kTileK, sh, buf ^ 1);
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
            // Each 16 x 16 result through the warp's staging area, then to dst within bounds
            // (consecutive lanes, consecutive rows: dst's dim 0).
#pragma unroll
            for (int i = 0; i < 2; ++i) {
#pragma unroll
                for (int j = 0; j < 2; ++j) {
                    wmma::store_matrix_sync(sh.out[warp], acc[i][j], kFrag, wmma::mem_col_major);
                    __syncwarp();
                    for (int e = lane; e < kFrag * kFrag; e += kWarpSize) {
                        const int64_t m = m0 + 32 * warp_m + 16 * i + e % kFrag;
                        const int64_t n = n0 + 32 * warp_n + 16 * j + e / kFrag;
                        if (m < args.rows && n < args.columns) store_f32(args.dst, Index4{{m, n, i2, i3}}, sh.out[warp][e]);
                    }
                    __syncwarp();
                }
            }
        }
    }
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
    const dim3 grid(static_cast<unsigned>(tiles < kMaxBlocks ? tiles : kMaxBlocks), 1,
                    static_cast<unsigned>(plan.batches < 65535 ? plan.batches : 65535));
    const bool launched = with_block_type(
        a.type,
        [&](auto tag) {
            mul_mat_q_tiles_kernel<typename decltype(tag)::type><<<grid, kTileThreads, 0, ctx.stream>>>(args);
            return true;
        },
        false);
    if (!launched) {
        return Status(StatusCode::NotSupported, std::string("mul_mat: no tile kernel for ") + dtype_name(a.type));
    }
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

}  // namespace xb::cuda
