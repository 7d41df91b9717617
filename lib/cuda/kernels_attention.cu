// Attention kernels: soft_max (mask, scale, ALiBi, sinks), diag_mask_inf, rope (normal and neox, YaRN);
// flash_attn_ext is in kernels_flash_attn.cu. The scalar math (ALiBi slopes, rope's YaRN angles) is
// op_math.hpp's, shared with the CPU.
#include <cmath>

#include "core/op_math.hpp"
#include "core/ops.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/kernel_common.cuh"
#include "cuda/kernels.hpp"

namespace xb::cuda {

namespace {

// --- soft_max ----------------------------------------------------------------------------------------

// The softmax input of element i0 of a row: x * scale (+ slope * mask).
__device__ __forceinline__ float soft_max_input(const TensorDesc& src, const TensorDesc& mask, bool masked,
                                                const Index4& r, int64_t i0, float scale, float slope) {
    float w = load_f32(src, with_dim(r, 0, i0)) * scale;
    if (masked) {
        const Index4 m{{i0, r.i[1], r.i[2] % mask.ne[2], r.i[3] % mask.ne[3]}};
        w += slope * load_f32(mask, m);
    }
    return w;
}

// The sink of row r's head (dim 2), one more logit of its normalisation with no output; -inf
// (none) when there are no sinks.
__device__ __forceinline__ float row_sink(const float* sinks, const Index4& r) {
    return sinks != nullptr ? sinks[r.i[2]] : -INFINITY;
}

// Rows too long for soft_max_row_kernel: one block per row: max, then the sum of exponentials in
// double, then the normalised values.
// With `cached`, the row's inputs and then their exponentials are kept in shared memory (ne[0]
// floats), so src and the mask are read once and exp runs once per element; otherwise the inputs
// are recomputed in each pass. Each thread touches only its own elements, so dst may alias src.
__global__ void soft_max_kernel(TensorDesc src, TensorDesc mask, bool masked, TensorDesc dst, float scale,
                                float max_bias, const float* sinks, bool cached) {
    extern __shared__ float soft_max_row[];
    __shared__ float max_scratch[kMaxBlockSize / kWarpSize];
    __shared__ double sum_scratch[kMaxBlockSize / kWarpSize];
    const int64_t n = src.ne[0];
    const int64_t rows = row_count(src);
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const Index4 r = row_start(src, row);
        const float slope = alibi_slope_f32(static_cast<int>(r.i[2]), static_cast<int>(src.ne[2]), max_bias);
        float max = -INFINITY;
        for (int64_t i0 = threadIdx.x; i0 < n; i0 += blockDim.x) {
            const float w = soft_max_input(src, mask, masked, r, i0, scale, slope);
            if (cached) soft_max_row[i0] = w;
            max = fmaxf(max, w);
        }
        max = block_reduce(max, MaxOp{}, -INFINITY, max_scratch);
        const float sink = row_sink(sinks, r);
        max = fmaxf(max, sink);
        double sum = 0.0;
        for (int64_t i0 = threadIdx.x; i0 < n; i0 += blockDim.x) {
            const float w = cached ? soft_max_row[i0] : soft_max_input(src, mask, masked, r, i0, scale, slope);
            const float e = expf(w - max);
            if (cached) soft_max_row[i0] = e;
            sum += static_cast<double>(e);
        }
        sum = block_reduce(sum, SumOp{}, 0.0, sum_scratch);
        if (sink != -INFINITY) sum += static_cast<double>(expf(sink - max));
        // A row of only -inf (and no sink) gives NaN (exp(-inf - -inf)), as on the CPU and in ggml.
        const float inv = static_cast<float>(1.0 / sum);
        // The barriers inside block_reduce come after every read of pass 2: writing now is safe.
        for (int64_t i0 = threadIdx.x; i0 < n; i0 += blockDim.x) {
            const float e = cached ? soft_max_row[i0]
                                   : expf(soft_max_input(src, mask, masked, r, i0, scale, slope) - max);
            store_f32(dst, with_dim(r, 0, i0), e * inv);
        }
    }
}

// Four consecutive elements of a float type at p (aligned to four elements), as f32.
__device__ __forceinline__ float4 load4_f32(DType t, const char* p) {
    if (t == DType::F32) return *reinterpret_cast<const float4*>(p);
    const uint2 u = *reinterpret_cast<const uint2*>(p);
    if (t == DType::F16) {
        const float2 lo = __half22float2(*reinterpret_cast<const __half2*>(&u.x));
        const float2 hi = __half22float2(*reinterpret_cast<const __half2*>(&u.y));
        return make_float4(lo.x, lo.y, hi.x, hi.y);
    }
    return make_float4(bits_float(u.x << 16), bits_float(u.x & 0xffff0000u), bits_float(u.y << 16),
                       bits_float(u.y & 0xffff0000u));
}

// One block per row with the row in registers: thread t holds accesses t, t + blockDim, ... of
// kWidth elements each (kWidth 4: src and dst f32 rows 16-byte aligned, the mask's aligned to four
// elements; then one 16-byte load per access). src and the mask are read once, dst written once;
// max and sum are float block reductions. Padding past the row scores -inf and weighs 0.
template <int kWidth, int kPerThread>
__global__ void soft_max_row_kernel(TensorDesc src, TensorDesc mask, bool masked, TensorDesc dst, float scale,
                                    float max_bias, const float* sinks) {
    __shared__ float scratch[kMaxBlockSize / kWarpSize];
    const int64_t n = src.ne[0];
    const int64_t rows = row_count(src);
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const Index4 r = row_start(src, row);
        const float slope = alibi_slope_f32(static_cast<int>(r.i[2]), static_cast<int>(src.ne[2]), max_bias);
        const char* s_row = element_address(src, r);
        const char* m_row =
            masked ? element_address(mask, Index4{{0, r.i[1], r.i[2] % mask.ne[2], r.i[3] % mask.ne[3]}}) : nullptr;
        float x[kPerThread][kWidth];
        float max = -INFINITY;
#pragma unroll
        for (int a = 0; a < kPerThread; ++a) {
            const int64_t i0 = (threadIdx.x + static_cast<int64_t>(a) * blockDim.x) * kWidth;
            if constexpr (kWidth == 4) {
                if (i0 < n) {
                    const float4 v = *reinterpret_cast<const float4*>(s_row + 4 * i0);
                    const float4 m = masked ? load4_f32(mask.type, m_row + i0 * mask.nb[0]) : make_float4(0, 0, 0, 0);
                    x[a][0] = v.x * scale + slope * m.x;
                    x[a][1] = v.y * scale + slope * m.y;
                    x[a][2] = v.z * scale + slope * m.z;
                    x[a][3] = v.w * scale + slope * m.w;
                } else {
#pragma unroll
                    for (float& v : x[a]) v = -INFINITY;
                }
            } else {
                x[a][0] = i0 < n ? load_as_f32(src.type, s_row + i0 * src.nb[0]) * scale +
                                       (masked ? slope * load_as_f32(mask.type, m_row + i0 * mask.nb[0]) : 0.0f)
                                 : -INFINITY;
            }
#pragma unroll
            for (int j = 0; j < kWidth; ++j) max = fmaxf(max, x[a][j]);
        }
        max = block_reduce(max, MaxOp{}, -INFINITY, scratch);
        const float sink = row_sink(sinks, r);
        max = fmaxf(max, sink);
        float sum = 0.0f;
#pragma unroll
        for (int a = 0; a < kPerThread; ++a) {
            const int64_t i0 = (threadIdx.x + static_cast<int64_t>(a) * blockDim.x) * kWidth;
#pragma unroll
            for (int j = 0; j < kWidth; ++j) {
                // A row of only -inf gives NaN (exp(-inf - -inf)), as on the CPU and in ggml.
                x[a][j] = i0 < n ? expf(x[a][j] - max) : 0.0f;
                sum += x[a][j];
            }
        }
        sum = block_reduce(sum, SumOp{}, 0.0f, scratch);
        if (sink != -INFINITY) sum += expf(sink - max);
        const float inv = 1.0f / sum;
        char* d_row = element_address(dst, r);
#pragma unroll
        for (int a = 0; a < kPerThread; ++a) {
            const int64_t i0 = (threadIdx.x + static_cast<int64_t>(a) * blockDim.x) * kWidth;
            if (i0 >= n) continue;
            if constexpr (kWidth == 4) {
                *reinterpret_cast<float4*>(d_row + 4 * i0) =
                    make_float4(x[a][0] * inv, x[a][1] * inv, x[a][2] * inv, x[a][3] * inv);
            } else {
                store_from_f32(dst.type, d_row + i0 * dst.nb[0], x[a][0] * inv);
            }
        }
    }
}

template <int kWidth>
Status launch_soft_max_rows(const LaunchContext& ctx, const SoftMaxLaunch& l, int64_t rows, const TensorDesc& src,
                            const TensorDesc& mask, bool masked, const TensorDesc& dst, float scale, float max_bias,
                            const float* sinks) {
    const int blocks = row_blocks(rows);
    switch (l.per_thread) {
        case 1: soft_max_row_kernel<kWidth, 1><<<blocks, l.threads, 0, ctx.stream>>>(src, mask, masked, dst, scale, max_bias, sinks); break;
        case 2: soft_max_row_kernel<kWidth, 2><<<blocks, l.threads, 0, ctx.stream>>>(src, mask, masked, dst, scale, max_bias, sinks); break;
        case 4: soft_max_row_kernel<kWidth, 4><<<blocks, l.threads, 0, ctx.stream>>>(src, mask, masked, dst, scale, max_bias, sinks); break;
        case 8: soft_max_row_kernel<kWidth, 8><<<blocks, l.threads, 0, ctx.stream>>>(src, mask, masked, dst, scale, max_bias, sinks); break;
        default: return Status(StatusCode::Internal, "soft_max: no row kernel for this many values per thread");
    }
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

__global__ void diag_mask_inf_kernel(TensorDesc src, TensorDesc dst, int64_t n_past, int64_t n) {
    for (int64_t f = thread_index(); f < n; f += thread_count()) {
        const Index4 i = unravel(dst, f);
        const float v = load_f32(src, i);
        store_f32(dst, i, i.i[0] > n_past + i.i[1] ? -INFINITY : v);
    }
}

// --- rope ---------------------------------------------------------------------------------------------

struct RopeArgs {
    int n_dims;
    bool neox;
    float theta_scale;  // freq_base^(-2 / n_dims), computed on the host as the CPU does
    float freq_scale;
    float ext_factor;
    float attn_factor;
    RopeCorrDims corr;
};

// cache[t * n_dims + i0] = cos, [.. + 1] = sin of pair i0 at token t's position: the angle is a
// running product over the pairs, exactly as the CPU builds its cache.
// Pair i0's angle is divided by freq_factors[i0 / 2] when there are factors (nullptr: none).
__global__ void rope_cache_kernel(TensorDesc positions, int64_t n_tokens, RopeArgs args, const float* freq_factors,
                                  float* cache) {
    for (int64_t t = thread_index(); t < n_tokens; t += thread_count()) {
        float theta = static_cast<float>(*reinterpret_cast<const int32_t*>(element_address(positions, Index4{{t, 0, 0, 0}})));
        float* out = cache + t * args.n_dims;
        for (int i0 = 0; i0 < args.n_dims; i0 += 2) {
            const float factor = freq_factors != nullptr ? freq_factors[i0 / 2] : 1.0f;
            const RopeCosSin cs = rope_yarn(theta / factor, args.freq_scale, args.corr, i0, args.ext_factor, args.attn_factor);
            out[i0] = cs.cos;
            out[i0 + 1] = cs.sin;
            theta *= args.theta_scale;
        }
    }
}

// One thread per rotated pair (it reads both elements before writing either: in place is safe) or
// per element past n_dims (copied).
__global__ void rope_kernel(TensorDesc src, TensorDesc dst, RopeArgs args, const float* cache, int64_t n) {
    const int64_t pairs = args.n_dims / 2;
    const int64_t per_row = pairs + (src.ne[0] - args.n_dims);
    for (int64_t f = thread_index(); f < n; f += thread_count()) {
        const Index4 r = row_start(src, f / per_row);
        const int64_t unit = f % per_row;
        if (unit >= pairs) {
            const Index4 i = with_dim(r, 0, args.n_dims + (unit - pairs));
            store_f32(dst, i, load_f32(src, i));
            continue;
        }
        // Normal rotates (2p, 2p + 1); neox rotates (p, p + n_dims / 2).
        const Index4 i0 = with_dim(r, 0, args.neox ? unit : 2 * unit);
        const Index4 i1 = with_dim(r, 0, args.neox ? unit + pairs : 2 * unit + 1);
        const float* cs = cache + r.i[2] * args.n_dims + 2 * unit;
        const float x0 = load_f32(src, i0);
        const float x1 = load_f32(src, i1);
        store_f32(dst, i0, x0 * cs[0] - x1 * cs[1]);
        store_f32(dst, i1, x0 * cs[1] + x1 * cs[0]);
    }
}

}  // namespace

Status launch_soft_max(const LaunchContext& ctx, const Tensor& dst) {
    const Tensor& src = *dst.src[0];
    const Tensor* mask = dst.src[1];
    const SoftMaxParams params = SoftMaxParams::load(dst);
    const TensorDesc s = describe(src);
    const TensorDesc m = mask != nullptr ? describe(*mask) : TensorDesc{};
    const TensorDesc d = describe(dst);
    // Sinks: contiguous f32, one per head (the builder checks it).
    const auto* sinks = dst.src[2] != nullptr ? static_cast<const float*>(dst.src[2]->data) : nullptr;
    if (src.nrows() == 0 || src.ne[0] == 0) return Status::ok();
    // Four elements per access when every row of src, dst and the mask allows it.
    const bool vectors = src.ne[0] % 4 == 0 && rows_aligned16(s) && rows_aligned16(d) &&
                         (mask == nullptr || rows_aligned_to(m, 4 * element_bytes(m.type)));
    const SoftMaxLaunch rows4 = soft_max_launch(src.ne[0], 4);
    const SoftMaxLaunch rows1 = soft_max_launch(src.ne[0], 1);
    if (vectors && rows4.fits) {
        return launch_soft_max_rows<4>(ctx, rows4, src.nrows(), s, m, mask != nullptr, d, params.scale, params.max_bias, sinks);
    }
    if (rows1.fits) {
        return launch_soft_max_rows<1>(ctx, rows1, src.nrows(), s, m, mask != nullptr, d, params.scale, params.max_bias, sinks);
    }
    // Rows too long for registers: cached in shared memory when they fit there, else recomputed.
    const size_t row_bytes = static_cast<size_t>(src.ne[0]) * sizeof(float);
    const bool cached = row_bytes <= kMaxSharedBytes;
    soft_max_kernel<<<row_blocks(src.nrows()), reduction_block_size(src.ne[0], kRowBlockSize), cached ? row_bytes : 0,
                      ctx.stream>>>(s, m, mask != nullptr, d, params.scale, params.max_bias, sinks, cached);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

Status launch_diag_mask_inf(const LaunchContext& ctx, const Tensor& dst) {
    const int64_t n = dst.nelements();
    diag_mask_inf_kernel<<<elementwise_blocks(n), kBlockSize, 0, ctx.stream>>>(describe(*dst.src[0]), describe(dst),
                                                                               DiagMaskInfParams::load(dst).n_past, n);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

Status launch_rope(const LaunchContext& ctx, const Tensor& dst) {
    const Tensor& src = *dst.src[0];
    const RopeParams p = RopeParams::load(dst);
    RopeArgs args{};
    args.n_dims = p.n_dims;
    args.neox = p.mode == RopeMode::Neox;
    args.theta_scale = std::pow(p.freq_base, -2.0f / static_cast<float>(p.n_dims));
    args.freq_scale = p.freq_scale;
    args.ext_factor = p.ext_factor;
    args.attn_factor = p.attn_factor;
    args.corr = rope_yarn_corr_dims(p.n_dims, p.n_ctx_orig, p.freq_base, p.beta_fast, p.beta_slow);
    const int64_t n_tokens = src.ne[2];
    if (ctx.scratch_bytes < static_cast<size_t>(n_tokens) * static_cast<size_t>(p.n_dims) * sizeof(float)) {
        return Status(StatusCode::Internal, "rope: the scratch reserved for the cos/sin table is too small");
    }
    auto* cache = reinterpret_cast<float*>(ctx.scratch);
    // Contiguous f32 (the op builder checks it).
    const float* freq_factors = dst.src[2] != nullptr ? static_cast<const float*>(dst.src[2]->data) : nullptr;
    rope_cache_kernel<<<elementwise_blocks(n_tokens), kBlockSize, 0, ctx.stream>>>(describe(*dst.src[1]), n_tokens,
                                                                                   args, freq_factors, cache);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    const int64_t units = src.nrows() * (p.n_dims / 2 + (src.ne[0] - p.n_dims));
    rope_kernel<<<elementwise_blocks(units), kBlockSize, 0, ctx.stream>>>(describe(src), describe(dst), args, cache,
                                                                          units);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

}  // namespace xb::cuda
