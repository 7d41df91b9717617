// flash_attn_ext: softmax(scale * q k^T + slope * mask) v, online (never the whole score matrix),
// as ggml's CUDA backend computes it: a vector kernel for decoding (one to four query rows per head:
// K and V read 16 bytes at a time by lane groups, q and the accumulators in registers), a general
// kernel for everything else (one warp per query row and key chunk), and a combine kernel that
// merges the key chunks (split-KV) of either, a block of threads per query row. The scalar math
// (ALiBi slopes, the attention sinks' fold) is op_math.hpp's, shared with the CPU.
#include <cmath>

#include "core/op_math.hpp"
#include "core/ops.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/cuda_support.hpp"
#include "cuda/kernel_common.cuh"
#include "cuda/kernels.hpp"

namespace xb::cuda {

namespace {

// --- the general kernel ---------------------------------------------------------------------------------

// Keys a flash_attn_ext warp takes at a time.
constexpr int kKeyGroup = 4;

struct FlashArgs {
    float scale;  // applied to q.k (already divided by softcap when softcap is on, as ggml)
    float max_bias;
    float softcap;
    const float* sinks;  // f32 [n_head] (nullptr: none)
};

// The factor of a finished query row of head h (running max m, sum l): 1 / l, after h's sink has
// joined the max and the sum with no value (op_math.hpp's fold_sink, as on the CPU). Every key
// masked out and no sink: zeros rather than 0/0.
__device__ __forceinline__ float finish_scale(const float* sinks, int64_t h, float m, float l) {
    float scale = 1.0f;
    if (sinks != nullptr) {
        const SinkFold f = fold_sink(m, l, sinks[h]);
        scale = f.scale;
        l = f.sum;
    }
    return l == 0.0f ? 0.0f : scale / l;
}

// One warp per (query row, key chunk). Query rows (iq, h, s) are numbered head fastest; chunk c of
// `splits` covers keys [c * chunk, (c + 1) * chunk). Lane l owns the elements l, l + 32, ... of the
// row's q copy and V accumulator in shared memory, so no lane reads another lane's slots and the
// warp needs no barrier besides its shuffles. Online softmax over the chunk's keys, with the CPU's
// update rule. With one split the warp writes dst; with more it writes its unnormalised
// accumulator, running max and sum to `partial` ([row][split][dv + 2] floats) for
// flash_combine_kernel.
__global__ void flash_attn_kernel(TensorDesc q, TensorDesc k, TensorDesc v, TensorDesc mask, bool masked,
                                  TensorDesc dst, FlashArgs args, int64_t splits, int64_t chunk, float* partial) {
    extern __shared__ float flash_shared[];
    const int64_t d = q.ne[0];
    const int64_t dv = v.ne[0];
    const int64_t n_q = q.ne[1];
    const int64_t n_head = q.ne[2];
    const int64_t n_kv = k.ne[1];
    const int64_t heads_per_kv = n_head / k.ne[2];
    const int64_t units = n_head * n_q * q.ne[3] * splits;
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
    const int64_t warps_per_block = blockDim.x / kWarpSize;
    float* q_row = flash_shared + warp * (d + dv);
    float* acc = q_row + d;

    for (int64_t unit = static_cast<int64_t>(blockIdx.x) * warps_per_block + warp; unit < units;
         unit += static_cast<int64_t>(gridDim.x) * warps_per_block) {
        const int64_t row = unit / splits;
        const int64_t split = unit - row * splits;
        const int64_t h = row % n_head;
        const int64_t iq = (row / n_head) % n_q;
        const int64_t s = row / n_head / n_q;
        const int64_t kvh = h / heads_per_kv;
        const float slope = alibi_slope_f32(static_cast<int>(h), static_cast<int>(n_head), args.max_bias);
        for (int64_t i = lane; i < d; i += kWarpSize) q_row[i] = load_f32(q, Index4{{i, iq, h, s}});
        for (int64_t i = lane; i < dv; i += kWarpSize) acc[i] = 0.0f;

        float run_max = -INFINITY;
        float run_sum = 0.0f;
        const int64_t first = split * chunk;
        const int64_t last = first + chunk < n_kv ? first + chunk : n_kv;
        // kKeyGroup keys at a time: their loads are independent, so the warp waits for memory once
        // per group rather than once per key. The group's scores update the online softmax together
        // (the same result as key by key, up to rounding).
        for (int64_t ic0 = first; ic0 < last; ic0 += kKeyGroup) {
            bool live[kKeyGroup];
            float score[kKeyGroup];
            // Every lane computes the same mask values: branches on them are uniform over the warp.
#pragma unroll
            for (int g = 0; g < kKeyGroup; ++g) {
                const int64_t ic = ic0 + g;
                live[g] = ic < last;
                score[g] = live[g] && masked
                               ? slope * load_f32(mask, Index4{{ic, iq, h % mask.ne[2], s % mask.ne[3]}})
                               : 0.0f;
                live[g] = live[g] && score[g] != -INFINITY;  // masked out: contributes nothing
            }
            float dot[kKeyGroup] = {};
            for (int64_t i = lane; i < d; i += kWarpSize) {
                const float qi = q_row[i];
#pragma unroll
                for (int g = 0; g < kKeyGroup; ++g) {
                    if (live[g]) dot[g] += qi * load_f32(k, Index4{{i, ic0 + g, kvh, s}});
                }
            }
            float group_max = -INFINITY;
            bool nan_score = false;
#pragma unroll
            for (int g = 0; g < kKeyGroup; ++g) {
                float sc = warp_reduce(dot[g], SumOp{}) * args.scale;
                if (args.softcap != 0.0f) sc = args.softcap * tanhf(sc);
                score[g] = live[g] ? sc + score[g] : -INFINITY;
                nan_score = nan_score || isnan(score[g]);
                group_max = fmaxf(group_max, score[g]);  // fmaxf drops a NaN: kept by run_sum instead
            }
            if (nan_score) run_sum = NAN;  // a NaN score: the whole row is NaN (the CPU's rule)
            if (group_max == -INFINITY) continue;
            const float new_max = fmaxf(run_max, group_max);
            const float ms = expf(run_max - new_max);  // rescales what is accumulated so far (0 at first)
            float weight[kKeyGroup];
            float weight_sum = 0.0f;
#pragma unroll
            for (int g = 0; g < kKeyGroup; ++g) {
                weight[g] = live[g] ? expf(score[g] - new_max) : 0.0f;
                weight_sum += weight[g];
            }
            for (int64_t i = lane; i < dv; i += kWarpSize) {
                float a = acc[i] * ms;
#pragma unroll
                for (int g = 0; g < kKeyGroup; ++g) {
                    if (live[g]) a += weight[g] * load_f32(v, Index4{{i, ic0 + g, kvh, s}});
                }
                acc[i] = a;
            }
            run_sum = run_sum * ms + weight_sum;
            run_max = new_max;
        }
        if (splits == 1) {
            const float inv = finish_scale(args.sinks, h, run_max, run_sum);
            for (int64_t i = lane; i < dv; i += kWarpSize) store_f32(dst, Index4{{i, h, iq, s}}, acc[i] * inv);
            continue;
        }
        float* out = partial + unit * (dv + 2);
        for (int64_t i = lane; i < dv; i += kWarpSize) out[i] = acc[i];
        if (lane == 0) {
            out[dv] = run_max;
            out[dv + 1] = run_sum;
        }
    }
}

// --- the vector kernel -------------------------------------------------------------------------------------

struct FlashVecArgs {
    TensorDesc q, k, v, mask, dst;
    bool masked = false;
    FlashArgs math{};
    int64_t splits = 1, chunk = 0;
    float* partial = nullptr;  // splits > 1: [row][split][dv + 2]
};

// Eight consecutive K or V elements of a float type at p (16-byte aligned), as f32.
__device__ __forceinline__ void load8_f32(DType t, const char* p, float (&out)[8]) {
    if (t == DType::F32) {
        const float4 lo = reinterpret_cast<const float4*>(p)[0];
        const float4 hi = reinterpret_cast<const float4*>(p)[1];
        out[0] = lo.x;
        out[1] = lo.y;
        out[2] = lo.z;
        out[3] = lo.w;
        out[4] = hi.x;
        out[5] = hi.y;
        out[6] = hi.z;
        out[7] = hi.w;
        return;
    }
    load8_half_f32(t, p, out);
}

// The running softmax of one query row over the keys one lane group (or warp, or block) has seen:
// max m, sum l of exp(score - m), and the accumulated exp(score - m) * v of the lane's eight values.
// Merging two states is exact up to rounding whatever the order: the CPU's rule.
struct OnlineSoftmax {
    float m = -INFINITY;
    float l = 0.0f;
    float acc[8] = {};

    __device__ __forceinline__ void add(float score, const float (&v)[8]) {
        if (score == -INFINITY) return;  // a masked key weighs nothing
        if (isnan(score)) {
            l = NAN;  // a NaN score: the whole row is NaN (the CPU's rule); merges keep it
            return;
        }
        const float m_new = fmaxf(m, score);
        const float keep = expf(m - m_new);  // 0 while nothing was seen (m = -inf)
        const float p = expf(score - m_new);
        l = l * keep + p;
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[j] = acc[j] * keep + p * v[j];
        m = m_new;
    }
    // Merges the state of the lane `offset` away (xor) into this one; every lane calls it.
    __device__ __forceinline__ void merge_lane(int offset) {
        const float mo = __shfl_xor_sync(0xffffffffu, m, offset);
        const float lo = __shfl_xor_sync(0xffffffffu, l, offset);
        const float m_new = fmaxf(m, mo);
        const float a = m == -INFINITY ? 0.0f : expf(m - m_new);
        const float b = mo == -INFINITY ? 0.0f : expf(mo - m_new);
        l = l * a + lo * b;
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[j] = acc[j] * a + __shfl_xor_sync(0xffffffffu, acc[j], offset) * b;
        m = m_new;
    }
};

// Lanes per key for head size D: enough lanes of eight values each, a power of two. Groups of lanes
// take consecutive keys, so that a warp reads consecutive rows of K and V.
template <int D>
inline constexpr int kLanesPerKey = D <= 64 ? 8 : D <= 128 ? 16 : 32;
// Keys a lane group takes per loop step: their loads go out together.
constexpr int kVecKeysPerStep = 2;

// One block per (head h, group of kRows query rows, key split). Lane `lane % G` of a lane group
// holds elements 8 (lane % G) .. + 7 of q (for each row) and of the accumulators; the group's
// lanes reduce each score with shuffles. At the end the groups' states merge across the warp, the
// warps' through shared memory, and the block writes dst (one split) or its partial result.
template <int D, int kRows>
__global__ void __launch_bounds__(kFlashVecWarps * kWarpSize) flash_attn_vec_kernel(FlashVecArgs args) {
    constexpr int G = kLanesPerKey<D>;
    constexpr int kKeysPerWarp = kWarpSize / G;
    constexpr int kKeysPerBlockStep = kFlashVecWarps * kKeysPerWarp * kVecKeysPerStep;
    __shared__ float block_m[kFlashVecWarps][kRows];
    __shared__ float block_l[kFlashVecWarps][kRows];
    __shared__ float block_acc[kFlashVecWarps][kRows][D];

    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
    const int part = lane % G;                 // this lane's eight values: 8 part .. 8 part + 7
    const bool has_part = 8 * part < D;
    const int key_lane = lane / G;             // which of the warp's keys this lane group takes
    const int64_t n_q = args.q.ne[1];
    const int64_t n_head = args.q.ne[2];
    const int64_t n_kv = args.k.ne[1];
    const int64_t groups = (n_q + kRows - 1) / kRows;
    const int64_t h = blockIdx.x % n_head;
    const int64_t iq0 = ((blockIdx.x / n_head) % groups) * kRows;
    const int64_t s = blockIdx.x / n_head / groups;
    const int64_t split = blockIdx.y;
    const int64_t kvh = h / (n_head / args.k.ne[2]);
    const float slope = alibi_slope_f32(static_cast<int>(h), static_cast<int>(n_head), args.math.max_bias);
    const int64_t first = split * args.chunk;
    const int64_t last = first + args.chunk < n_kv ? first + args.chunk : n_kv;

    float q[kRows][8];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const bool in = has_part && iq0 + r < n_q;
            q[r][j] = in ? load_f32(args.q, Index4{{8 * part + j, iq0 + r, h, s}}) : 0.0f;
        }
    }
    OnlineSoftmax state[kRows];
    const char* k_base = args.k.data + kvh * args.k.nb[2] + s * args.k.nb[3] + 8 * part * element_bytes(args.k.type);
    const char* v_base = args.v.data + kvh * args.v.nb[2] + s * args.v.nb[3] + 8 * part * element_bytes(args.v.type);

    // Every lane runs every step (the shuffles need the whole warp); keys past the chunk score -inf.
    for (int64_t k0 = first + warp * kKeysPerWarp * kVecKeysPerStep; k0 < last; k0 += kKeysPerBlockStep) {
        float kv[kVecKeysPerStep][8];
        int64_t key[kVecKeysPerStep];
        bool live[kVecKeysPerStep];
#pragma unroll
        for (int u = 0; u < kVecKeysPerStep; ++u) {
            key[u] = k0 + u * kKeysPerWarp + key_lane;
            live[u] = key[u] < last;
            if (live[u] && has_part) {
                load8_f32(args.k.type, k_base + key[u] * args.k.nb[1], kv[u]);
            } else {
#pragma unroll
                for (float& x : kv[u]) x = 0.0f;
            }
        }
        float score[kVecKeysPerStep][kRows];
#pragma unroll
        for (int u = 0; u < kVecKeysPerStep; ++u) {
#pragma unroll
            for (int r = 0; r < kRows; ++r) {
                float dot = 0.0f;
#pragma unroll
                for (int j = 0; j < 8; ++j) dot += q[r][j] * kv[u][j];
#pragma unroll
                for (int offset = G / 2; offset > 0; offset /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
                float sc = dot * args.math.scale;
                if (args.math.softcap != 0.0f) sc = args.math.softcap * tanhf(sc);
                if (live[u] && args.masked && iq0 + r < n_q) {
                    const Index4 m{{key[u], iq0 + r, h % args.mask.ne[2], s % args.mask.ne[3]}};
                    sc += slope * load_f32(args.mask, m);
                }
                score[u][r] = live[u] ? sc : -INFINITY;
            }
        }
#pragma unroll
        for (int u = 0; u < kVecKeysPerStep; ++u) {
            float vv[8];
            if (live[u] && has_part) {
                load8_f32(args.v.type, v_base + key[u] * args.v.nb[1], vv);
            } else {
#pragma unroll
                for (float& x : vv) x = 0.0f;
            }
#pragma unroll
            for (int r = 0; r < kRows; ++r) state[r].add(score[u][r], vv);
        }
    }

    // The warp's lane groups into one state (lanes with the same part agree afterwards) ...
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
        for (int offset = G; offset < kWarpSize; offset *= 2) state[r].merge_lane(offset);
    }
    if (lane < G) {
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
            if (has_part) {
#pragma unroll
                for (int j = 0; j < 8; ++j) block_acc[warp][r][8 * part + j] = state[r].acc[j];
            }
            if (lane == 0) {
                block_m[warp][r] = state[r].m;
                block_l[warp][r] = state[r].l;
            }
        }
    }
    __syncthreads();
    // ... and the warps' into the block's, one value of one row per thread.
    for (int idx = static_cast<int>(threadIdx.x); idx < kRows * D; idx += kFlashVecWarps * kWarpSize) {
        const int r = idx / D;
        const int e = idx % D;
        const int64_t iq = iq0 + r;
        if (iq >= n_q) continue;
        float m = -INFINITY;
#pragma unroll
        for (int w = 0; w < kFlashVecWarps; ++w) m = fmaxf(m, block_m[w][r]);
        float l = 0.0f, o = 0.0f;
#pragma unroll
        for (int w = 0; w < kFlashVecWarps; ++w) {
            const float wm = block_m[w][r];
            const float f = wm == -INFINITY ? 0.0f : expf(wm - m);
            l += block_l[w][r] * f;
            o += block_acc[w][r][e] * f;
        }
        if (args.splits == 1) {
            store_f32(args.dst, Index4{{e, h, iq, s}}, o * finish_scale(args.math.sinks, h, m, l));
            continue;
        }
        const int64_t row = h + n_head * (iq + n_q * s);
        float* out = args.partial + (row * args.splits + split) * (D + 2);
        out[e] = o;
        if (e == 0) {
            out[D] = m;
            out[D + 1] = l;
        }
    }
}

// --- merging the key splits --------------------------------------------------------------------------------

// One block per query row: each split weighs exp(its max - the overall max) (nothing when it saw no
// unmasked key); the weights are computed once, in shared memory, then every thread sums its
// values over the splits. A row with no unmasked key at all gives zeros.
__global__ void flash_combine_kernel(const float* partial, TensorDesc dst, const float* sinks, int64_t n_head, int64_t n_q,
                                     int64_t rows, int64_t splits, int64_t dv) {
    extern __shared__ float split_weight[];
    __shared__ float scratch[kMaxBlockSize / kWarpSize];
    const int64_t stride = dv + 2;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const float* parts = partial + row * splits * stride;
        float m = -INFINITY;
        for (int64_t c = threadIdx.x; c < splits; c += blockDim.x) m = fmaxf(m, parts[c * stride + dv]);
        m = block_reduce(m, MaxOp{}, -INFINITY, scratch);
        float l = 0.0f;
        for (int64_t c = threadIdx.x; c < splits; c += blockDim.x) {
            const float mc = parts[c * stride + dv];
            const float w = mc == -INFINITY ? 0.0f : expf(mc - m);
            split_weight[c] = w;
            l += parts[c * stride + dv + 1] * w;
        }
        l = block_reduce(l, SumOp{}, 0.0f, scratch);  // its barriers also publish split_weight
        const int64_t h = row % n_head;
        const float inv = finish_scale(sinks, h, m, l);
        const int64_t iq = (row / n_head) % n_q;
        const int64_t s = row / n_head / n_q;
        for (int64_t i = threadIdx.x; i < dv; i += blockDim.x) {
            float o = 0.0f;
            for (int64_t c = 0; c < splits; ++c) o += parts[c * stride + i] * split_weight[c];
            store_f32(dst, Index4{{i, h, iq, s}}, o * inv);
        }
        __syncthreads();  // split_weight is rewritten for the next row
    }
}

template <int D>
Status launch_vec(const LaunchContext& ctx, const FlashVecArgs& args, int rows_per_block, dim3 grid) {
    constexpr int kThreads = kFlashVecWarps * kWarpSize;
    switch (rows_per_block) {
        case 1: flash_attn_vec_kernel<D, 1><<<grid, kThreads, 0, ctx.stream>>>(args); break;
        case 2: flash_attn_vec_kernel<D, 2><<<grid, kThreads, 0, ctx.stream>>>(args); break;
        case 4: flash_attn_vec_kernel<D, 4><<<grid, kThreads, 0, ctx.stream>>>(args); break;
        default: return Status(StatusCode::Internal, "flash_attn_ext: no vector kernel for this many query rows");
    }
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

Status launch_vec_for_head(const LaunchContext& ctx, const FlashVecArgs& args, int64_t d, int rows_per_block,
                           dim3 grid) {
    switch (d) {
        case 64: return launch_vec<64>(ctx, args, rows_per_block, grid);
        case 80: return launch_vec<80>(ctx, args, rows_per_block, grid);
        case 96: return launch_vec<96>(ctx, args, rows_per_block, grid);
        case 112: return launch_vec<112>(ctx, args, rows_per_block, grid);
        case 128: return launch_vec<128>(ctx, args, rows_per_block, grid);
        case 256: return launch_vec<256>(ctx, args, rows_per_block, grid);
        default: return Status(StatusCode::Internal, "flash_attn_ext: no vector kernel for head size " + std::to_string(d));
    }
}

}  // namespace

Status launch_flash_attn_ext(const LaunchContext& ctx, const Tensor& dst) {
    const Tensor& q = *dst.src[0];
    const Tensor& v = *dst.src[2];
    const Tensor* mask = dst.src[3];
    const FlashAttnParams p = FlashAttnParams::load(dst);
    // Sinks: contiguous f32, one per head (the builder checks it).
    const auto* sinks = dst.src[4] != nullptr ? static_cast<const float*>(dst.src[4]->data) : nullptr;
    const FlashArgs math{p.score_scale(), p.max_bias, p.softcap, sinks};
    const int64_t rows = q.ne[1] * q.ne[2] * q.ne[3];
    if (rows == 0) return Status::ok();
    const FlashPlan plan = plan_flash(flash_shape(dst));
    if (ctx.scratch_bytes < plan.partial_bytes) {
        return Status(StatusCode::Internal, "flash_attn_ext: the scratch reserved for the key splits is too small");
    }
    auto* partial = reinterpret_cast<float*>(ctx.scratch);
    if (plan.vector) {
        FlashVecArgs args;
        args.q = describe(q);
        args.k = describe(*dst.src[1]);
        args.v = describe(v);
        args.mask = mask != nullptr ? describe(*mask) : TensorDesc{};
        args.masked = mask != nullptr;
        args.dst = describe(dst);
        args.math = math;
        args.splits = plan.splits;
        args.chunk = plan.chunk;
        args.partial = partial;
        const int64_t groups = (q.ne[1] + plan.rows_per_block - 1) / plan.rows_per_block;
        const dim3 grid(static_cast<unsigned>(q.ne[2] * q.ne[3] * groups), static_cast<unsigned>(plan.splits));
        XB_RETURN_IF_ERROR(launch_vec_for_head(ctx, args, q.ne[0], plan.rows_per_block, grid));
    } else {
        const WarpLaunch launch = flash_launch(q.ne[0], v.ne[0], rows * plan.splits);
        flash_attn_kernel<<<launch.blocks, launch.warps_per_block * kWarpSize, launch.shared_bytes, ctx.stream>>>(
            describe(q), describe(*dst.src[1]), describe(v), mask ? describe(*mask) : TensorDesc{}, mask != nullptr,
            describe(dst), math, plan.splits, plan.chunk, partial);
        XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    }
    if (plan.splits > 1) {
        constexpr int kCombineThreads = 128;
        flash_combine_kernel<<<row_blocks(rows), kCombineThreads, flash_combine_shared_bytes(plan.splits), ctx.stream>>>(
            partial, describe(dst), sinks, q.ne[2], q.ne[1], rows, plan.splits, v.ne[0]);
        XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    }
    return Status::ok();
}

}  // namespace xb::cuda
