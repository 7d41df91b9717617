// The recurrent layers' kernels (core/ops.hpp defines them; the CPU's are
// cpu_kernels/kernels_recurrent.cpp, whose roundings these follow: f32 recurrences, sums in
// double).
//
// - ssm_conv: one thread per output element.
// - ssm_scan: one warp per (channel, head, sequence); lane l keeps states l, l + 32, ... in
//   registers through the tokens, and the warp sums y.
// - gated_delta_net: one thread per (value dim j, head, sequence): column j of the state S lives
//   in the thread's local memory (interleaved between threads, so its accesses coalesce), and
//   its update needs nothing of the other columns.
#include "core/op_math.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/kernel_common.cuh"
#include "cuda/kernels.hpp"

namespace xb::cuda {

namespace {

__device__ __forceinline__ const float* f32_at(const TensorDesc& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return reinterpret_cast<const float*>(element_address(t, Index4{{i0, i1, i2, i3}}));
}

__global__ void ssm_conv_kernel(TensorDesc sx, TensorDesc c, TensorDesc dst, int64_t n) {
    const int64_t d_conv = c.ne[0];
    for (int64_t f = thread_index(); f < n; f += thread_count()) {
        const Index4 idx = unravel(dst, f);  // (channel, token, sequence)
        const int64_t i = idx.i[0], t = idx.i[1], s = idx.i[2];
        double sum = 0.0;
        for (int64_t j = 0; j < d_conv; ++j) {
            sum += static_cast<double>(*f32_at(sx, t + j, i, s, 0)) * static_cast<double>(*f32_at(c, j, i, 0, 0));
        }
        store_f32(dst, idx, static_cast<float>(sum));
    }
}

constexpr int kScanPerLane = static_cast<int>(kMaxScanStateDim / kWarpSize);

__global__ void ssm_scan_kernel(TensorDesc s0, TensorDesc x, TensorDesc dt, TensorDesc A, TensorDesc B, TensorDesc C,
                                TensorDesc ids, float* y, KernelErrorRecord* errors, int slot, int64_t warps) {
    const int64_t d_state = s0.ne[0], head_dim = x.ne[0], n_head = x.ne[1], n_t = x.ne[2];
    const int64_t heads_per_group = n_head / B.ne[1];
    const bool per_state_decay = A.ne[0] != 1;
    const int lane = static_cast<int>(threadIdx.x % kWarpSize);
    for (int64_t w = thread_index() / kWarpSize; w < warps; w += thread_count() / kWarpSize) {
        const int64_t i = w % head_dim, h = (w / head_dim) % n_head, s = w / (head_dim * n_head);
        const int64_t id = load_index(ids, Index4{{s, 0, 0, 0}});
        if (id < 0 || id >= s0.ne[3]) {
            if (lane == 0 && i == 0 && h == 0) report_index_error(errors, slot, id, s0.ne[3]);
            continue;
        }
        const int64_t g = h / heads_per_group;
        float state[kScanPerLane];
#pragma unroll
        for (int m = 0; m < kScanPerLane; ++m) {
            const int64_t n = lane + m * kWarpSize;
            state[m] = n < d_state ? *f32_at(s0, n, i, h, id) : 0.0f;
        }
        const float a_head = *f32_at(A, 0, h, 0, 0);
        for (int64_t t = 0; t < n_t; ++t) {
            const float step = softplus_f32(*f32_at(dt, h, t, s, 0));
            const float x_step = *f32_at(x, i, h, t, s) * step;
            const float head_decay = expf(step * a_head);
            double out = 0.0;
#pragma unroll
            for (int m = 0; m < kScanPerLane; ++m) {
                const int64_t n = lane + m * kWarpSize;
                if (n >= d_state) continue;
                const float decay = per_state_decay ? expf(step * *f32_at(A, n, h, 0, 0)) : head_decay;
                state[m] = state[m] * decay + *f32_at(B, n, g, t, s) * x_step;
                out += static_cast<double>(state[m]) * static_cast<double>(*f32_at(C, n, g, t, s));
            }
            for (int offset = kWarpSize / 2; offset > 0; offset /= 2) out += __shfl_xor_sync(0xffffffffu, out, offset);
            if (lane == 0) y[i + head_dim * (h + n_head * (t + n_t * s))] = static_cast<float>(out);
        }
        float* final_state = y + element_count(x) + d_state * (i + head_dim * (h + n_head * s));
#pragma unroll
        for (int m = 0; m < kScanPerLane; ++m) {
            const int64_t n = lane + m * kWarpSize;
            if (n < d_state) final_state[n] = state[m];
        }
    }
}

__global__ void gated_delta_net_kernel(TensorDesc q, TensorDesc k, TensorDesc v, TensorDesc g, TensorDesc beta, TensorDesc state,
                                       float* out, int64_t n) {
    const int64_t d = v.ne[0], n_head = v.ne[1], n_t = v.ne[2], n_s = v.ne[3];
    const int64_t qk_heads = q.ne[1], seqs_per_qk = n_s / q.ne[3];
    const bool gate_per_key = g.ne[0] != 1;
    const float scale = 1.0f / sqrtf(static_cast<float>(d));
    float* final_states = out + d * n_head * n_t * n_s;
    for (int64_t f = thread_index(); f < n; f += thread_count()) {
        const int64_t j = f % d, h = (f / d) % n_head, s = f / (d * n_head);
        const int64_t hq = h % qk_heads, sq = s / seqs_per_qk;
        float column[kMaxDeltaNetDim];  // S[i][j] for every key dim i
        for (int64_t i = 0; i < d; ++i) column[i] = *f32_at(state, i, j, h, s);
        for (int64_t t = 0; t < n_t; ++t) {
            const float* gate = f32_at(g, 0, h, t, s);
            const float* kt = f32_at(k, 0, hq, t, sq);
            const float* qt = f32_at(q, 0, hq, t, sq);
            const float common_decay = expf(gate[0]);
            double kS = 0.0;
            for (int64_t i = 0; i < d; ++i) {
                column[i] *= gate_per_key ? expf(gate[i]) : common_decay;
                kS += static_cast<double>(column[i]) * static_cast<double>(kt[i]);
            }
            const float delta = (*f32_at(v, j, h, t, s) - static_cast<float>(kS)) * *f32_at(beta, 0, h, t, s);
            double o = 0.0;
            for (int64_t i = 0; i < d; ++i) {
                column[i] += kt[i] * delta;
                o += static_cast<double>(column[i]) * static_cast<double>(qt[i]);
            }
            out[j + d * (h + n_head * (t + n_t * s))] = static_cast<float>(o) * scale;
        }
        float* to = final_states + d * d * (h + n_head * s) + j * d;
        for (int64_t i = 0; i < d; ++i) to[i] = column[i];
    }
}

}  // namespace

Status launch_ssm_conv(const LaunchContext& ctx, const Tensor& dst) {
    const int64_t n = dst.nelements();
    if (n == 0) return Status::ok();
    ssm_conv_kernel<<<elementwise_blocks(n), kBlockSize, 0, ctx.stream>>>(describe(*dst.src[0]), describe(*dst.src[1]), describe(dst), n);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

Status launch_ssm_scan(const LaunchContext& ctx, const Tensor& dst) {
    const Tensor& x = *dst.src[1];
    const int64_t warps = x.ne[0] * x.ne[1] * x.ne[3];
    if (warps == 0) return Status::ok();
    ssm_scan_kernel<<<elementwise_blocks(warps * kWarpSize), kBlockSize, 0, ctx.stream>>>(
        describe(*dst.src[0]), describe(x), describe(*dst.src[2]), describe(*dst.src[3]), describe(*dst.src[4]),
        describe(*dst.src[5]), describe(*dst.src[6]), static_cast<float*>(dst.data), ctx.errors, ctx.error_slot, warps);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

Status launch_gated_delta_net(const LaunchContext& ctx, const Tensor& dst) {
    const Tensor& v = *dst.src[2];
    const int64_t n = v.ne[0] * v.ne[1] * v.ne[3];
    if (n == 0) return Status::ok();
    gated_delta_net_kernel<<<elementwise_blocks(n, 128), 128, 0, ctx.stream>>>(
        describe(*dst.src[0]), describe(*dst.src[1]), describe(v), describe(*dst.src[3]), describe(*dst.src[4]),
        describe(*dst.src[5]), static_cast<float*>(dst.data), n);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

}  // namespace xb::cuda
