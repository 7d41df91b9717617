// The recurrent layers' kernels: ssm_conv, ssm_scan (Mamba) and gated_delta_net (Qwen3.5,
// Qwen3-Next), as core/ops.hpp defines them. Each recurrence runs token by token in f32 from its
// state, as ggml's CPU kernels do; the dot products and sums accumulate in double (so this is at
// least as exact as ggml's f32 sums). Threads split the independent recurrences: channels for
// ssm_conv, heads for ssm_scan, (head, sequence) pairs for gated_delta_net.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/op_math.hpp"
#include "cpu_kernels/kernels.hpp"
#include "cpu_kernels/row_loops.hpp"

namespace xb::cpu_kernels {

namespace {

const float* f32_at(const Tensor& t, int64_t i0, int64_t i1, int64_t i2 = 0, int64_t i3 = 0) {
    return reinterpret_cast<const float*>(t.element_ptr(i0, i1, i2, i3));
}

}  // namespace

void compute_ssm_conv(const ComputeParams& p, Tensor& dst) {
    const Tensor& sx = *dst.src[0];
    const Tensor& c = *dst.src[1];
    if (dst.is_empty()) return;
    const int64_t d_conv = c.ne[0], n_t = dst.ne[1], n_s = dst.ne[2];
    const auto channels = p.split(dst.ne[0]);
    for (int64_t s = 0; s < n_s; ++s) {
        for (int64_t t = 0; t < n_t; ++t) {
            for (int64_t i = channels.begin; i < channels.end; ++i) {
                const float* window = f32_at(sx, t, i, s);  // rows are packed (the builder checks)
                const float* kernel = f32_at(c, 0, i);
                double sum = 0.0;
                for (int64_t j = 0; j < d_conv; ++j) sum += static_cast<double>(window[j]) * static_cast<double>(kernel[j]);
                *reinterpret_cast<float*>(dst.element_ptr(i, t, s)) = static_cast<float>(sum);
            }
        }
    }
}

void compute_ssm_scan(const ComputeParams& p, Tensor& dst) {
    const Tensor& s0 = *dst.src[0];
    const Tensor& x = *dst.src[1];
    const Tensor& dt = *dst.src[2];
    const Tensor& A = *dst.src[3];
    const Tensor& B = *dst.src[4];
    const Tensor& C = *dst.src[5];
    const Tensor& ids = *dst.src[6];
    const int64_t d_state = s0.ne[0], head_dim = x.ne[0], n_head = x.ne[1], n_t = x.ne[2], n_s = x.ne[3];
    const int64_t heads_per_group = n_head / B.ne[1];
    const bool per_state_decay = A.ne[0] != 1;  // Mamba-1
    const RowLoops& loops = row_loops();
    auto* y = reinterpret_cast<float*>(dst.data);
    float* final_states = y + x.nelements();
    const auto heads = p.split(n_head);
    std::vector<float> state(static_cast<size_t>(d_state * head_dim));
    for (int64_t s = 0; s < n_s; ++s) {
        const int32_t id = reinterpret_cast<const int32_t*>(ids.data)[s];
        if (id < 0 || id >= s0.ne[3]) {
            if (p.ith == 0) {
                p.report(Status(StatusCode::OutOfRange, "ssm_scan: state id " + std::to_string(id) + " out of range [0, " +
                                                            std::to_string(s0.ne[3]) + ")"));
            }
            continue;
        }
        for (int64_t h = heads.begin; h < heads.end; ++h) {
            const int64_t g = h / heads_per_group;
            const float a_head = *f32_at(A, 0, h);
            // The head's whole state [head_dim][d_state] stays in cache while the tokens run
            // through it, each token's B and C read once (not once per state row).
            for (int64_t i = 0; i < head_dim; ++i) {
                const float* from = f32_at(s0, 0, i, h, id);
                for (int64_t n = 0; n < d_state; ++n) state[static_cast<size_t>(i * d_state + n)] = from[n];
            }
            for (int64_t t = 0; t < n_t; ++t) {
                const float step = softplus_f32(*f32_at(dt, h, t, s));
                const float head_decay = std::exp(step * a_head);
                const float* b = f32_at(B, 0, g, t, s);
                const float* c = f32_at(C, 0, g, t, s);
                for (int64_t i = 0; i < head_dim; ++i) {
                    float* st = state.data() + i * d_state;
                    const float x_step = *f32_at(x, i, h, t, s) * step;
                    double out = 0.0;
                    if (per_state_decay) {
                        for (int64_t n = 0; n < d_state; ++n) st[n] = st[n] * std::exp(step * *f32_at(A, n, h)) + b[n] * x_step;
                        out = loops.dot(st, c, d_state);
                    } else {
                        // Mamba-2: one decay per head; the update and the read-out in one pass of
                        // the ISA's vectors (the prefill's hottest loop).
                        out = loops.scan_step(st, b, c, d_state, head_decay, x_step);
                    }
                    y[i + head_dim * (h + n_head * (t + n_t * s))] = static_cast<float>(out);
                }
            }
            float* to = final_states + d_state * head_dim * (h + n_head * s);
            for (int64_t e = 0; e < d_state * head_dim; ++e) to[e] = state[static_cast<size_t>(e)];
        }
    }
}

void compute_gated_delta_net(const ComputeParams& p, Tensor& dst) {
    const Tensor& q = *dst.src[0];
    const Tensor& k = *dst.src[1];
    const Tensor& v = *dst.src[2];
    const Tensor& g = *dst.src[3];
    const Tensor& beta = *dst.src[4];
    const Tensor& state = *dst.src[5];
    const int64_t d = v.ne[0], n_head = v.ne[1], n_t = v.ne[2], n_s = v.ne[3];
    const int64_t qk_heads = q.ne[1], seqs_per_qk = n_s / q.ne[3];
    const bool gate_per_key = g.ne[0] != 1;
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    const RowLoops& loops = row_loops();
    auto* out = reinterpret_cast<float*>(dst.data);
    float* final_states = out + d * n_head * n_t * n_s;
    std::vector<float> delta(static_cast<size_t>(d)), decay(static_cast<size_t>(d));
    const auto units = p.split(n_head * n_s);
    for (int64_t unit = units.begin; unit < units.end; ++unit) {
        const int64_t h = unit % n_head, s = unit / n_head, hq = h % qk_heads, sq = s / seqs_per_qk;
        // The recurrence runs in the result's state slot: row j holds column j of S.
        float* S = final_states + d * d * (h + n_head * s);
        const float* from = f32_at(state, 0, 0, h, s);
        for (int64_t e = 0; e < d * d; ++e) S[e] = from[e];
        for (int64_t t = 0; t < n_t; ++t) {
            const float* gate = f32_at(g, 0, h, t, s);
            if (gate_per_key) {
                for (int64_t i = 0; i < d; ++i) decay[static_cast<size_t>(i)] = std::exp(gate[i]);
                for (int64_t j = 0; j < d; ++j) loops.binary[static_cast<int>(BinaryOp::Mul)](S + j * d, decay.data(), S + j * d, d);
            } else {
                loops.scale(S, S, d * d, std::exp(gate[0]), 0.0f);
            }
            const float* kt = f32_at(k, 0, hq, t, sq);
            const float* qt = f32_at(q, 0, hq, t, sq);
            const float* vt = f32_at(v, 0, h, t, s);
            const float b = *f32_at(beta, 0, h, t, s);
            for (int64_t j = 0; j < d; ++j) {
                delta[static_cast<size_t>(j)] = (vt[j] - static_cast<float>(loops.dot(S + j * d, kt, d))) * b;
            }
            for (int64_t j = 0; j < d; ++j) loops.axpy(kt, S + j * d, d, delta[static_cast<size_t>(j)]);
            float* o = out + d * (h + n_head * (t + n_t * s));
            for (int64_t j = 0; j < d; ++j) o[j] = static_cast<float>(loops.dot(S + j * d, qt, d)) * scale;
        }
    }
}

}  // namespace xb::cpu_kernels
