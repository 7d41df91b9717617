// Op cases of the recurrent layers: ssm_conv (one token and a batch, several sequences, and the
// window as a model builds it: the state concatenated with the transposed batch), ssm_scan
// (Mamba-2's decay per head with one and several groups, Mamba-1's per state; one token and a
// batch; sequences reading their states out of order), gated_delta_net (a scalar gate and a
// gate per key dim; q/k heads shared by several value heads and sequences; one token and a
// batch; head sizes up to Qwen3-Next's 128).
//
// Inputs are drawn where the models keep them: decays below 1 (A < 0, gate logs <= 0), steps
// beta in (0, 1), and keys small enough that the delta rule's update contracts.
#include <cmath>
#include <string>

#include "exact/ops.hpp"
#include "opcheck/cases.hpp"

namespace xb::opcheck {

namespace {

using xb::DType;
using xb::Tensor;

void add_ssm_conv_cases(std::vector<OpCase>& cases) {
    struct Def {
        const char* name;
        int64_t d_conv, d_inner, n_t, n_s;
    };
    for (const Def& d : {Def{"decode", 4, 37, 1, 1}, Def{"batch", 4, 37, 7, 3}, Def{"wide_kernel", 7, 5, 3, 2}}) {
        cases.push_back({std::string("ssm_conv_") + d.name + "_f32",
                         [=](CaseBuilder& b) {
                             Tensor* sx = b.input(DType::F32, {d.d_conv - 1 + d.n_t, d.d_inner, d.n_s, 1});
                             return xb::ssm_conv(b.ctx(), sx, b.input(DType::F32, {d.d_conv, d.d_inner, 1, 1}));
                         },
                         [](const std::vector<RefArray>& in) { return exact::ssm_conv(in[0], in[1]); }, kTolF32Reduce});
    }
    // The window a model builds: the last d_conv - 1 inputs of each channel (the state), then the
    // batch transposed to one row per channel.
    cases.push_back({"ssm_conv_state_window_f32",
                     [](CaseBuilder& b) {
                         Tensor* state = b.input(DType::F32, {3, 37, 2, 1});
                         Tensor* x = b.input(DType::F32, {37, 5, 2, 1});
                         Tensor* window = xb::concat(b.ctx(), state, xb::transpose(b.ctx(), x), 0);
                         return xb::ssm_conv(b.ctx(), window, b.input(DType::F32, {4, 37, 1, 1}));
                     },
                     [](const std::vector<RefArray>& in) {
                         return exact::ssm_conv(exact::concat(in[0], exact::transpose(in[1]), 0), in[2]);
                     },
                     kTolF32Reduce});
}

void add_ssm_scan_cases(std::vector<OpCase>& cases) {
    struct Def {
        const char* name;
        int64_t d_state, head_dim, n_head, n_group, n_t, n_s, n_states;
        bool mamba1;
    };
    for (const Def& d : {Def{"decode", 16, 5, 6, 2, 1, 1, 1, false}, Def{"batch", 16, 5, 6, 2, 7, 2, 3, false},
                        Def{"one_group", 128, 3, 4, 1, 5, 2, 2, false}, Def{"mamba1", 16, 1, 9, 1, 6, 2, 2, true}}) {
        cases.push_back({std::string("ssm_scan_") + d.name + "_f32",
                         [=](CaseBuilder& b) {
                             Tensor* s = b.input(DType::F32, {d.d_state, d.head_dim, d.n_head, d.n_states});
                             Tensor* x = b.input(DType::F32, {d.head_dim, d.n_head, d.n_t, d.n_s});
                             Tensor* dt = b.input(DType::F32, {d.n_head, d.n_t, d.n_s, 1}, uniform(-3.0f, 2.0f));
                             Tensor* A = b.input(DType::F32, {d.mamba1 ? d.d_state : 1, d.n_head, 1, 1}, uniform(-4.0f, -0.1f));
                             Tensor* B = b.input(DType::F32, {d.d_state, d.n_group, d.n_t, d.n_s});
                             Tensor* C = b.input(DType::F32, {d.d_state, d.n_group, d.n_t, d.n_s});
                             Tensor* ids = b.input(DType::I32, {d.n_s, 1, 1, 1}, distinct_indices(d.n_states));
                             return xb::ssm_scan(b.ctx(), s, x, dt, A, B, C, ids);
                         },
                         [](const std::vector<RefArray>& in) { return exact::ssm_scan(in[0], in[1], in[2], in[3], in[4], in[5], in[6]); },
                         kTolF32Reduce});
    }
}

void add_gated_delta_net_cases(std::vector<OpCase>& cases) {
    struct Def {
        const char* name;
        int64_t d, n_head, qk_heads, n_t, n_s, qk_seqs;
        bool gate_per_key;
    };
    for (const Def& d : {Def{"decode", 16, 4, 2, 1, 1, 1, false}, Def{"batch", 16, 4, 2, 7, 2, 2, false},
                        Def{"shared_qk_seq", 16, 3, 3, 4, 2, 1, false}, Def{"kda", 16, 4, 4, 5, 2, 2, true},
                        Def{"head_128", 128, 2, 1, 3, 1, 1, false}}) {
        // Keys of |k|^2 about 1 whatever the head size, so that the update contracts.
        const float r = 1.7f / std::sqrt(static_cast<float>(d.d));
        cases.push_back({std::string("gated_delta_net_") + d.name + "_f32",
                         [=](CaseBuilder& b) {
                             Tensor* q = b.input(DType::F32, {d.d, d.qk_heads, d.n_t, d.qk_seqs}, uniform(-r, r));
                             Tensor* k = b.input(DType::F32, {d.d, d.qk_heads, d.n_t, d.qk_seqs}, uniform(-r, r));
                             Tensor* v = b.input(DType::F32, {d.d, d.n_head, d.n_t, d.n_s});
                             Tensor* g = b.input(DType::F32, {d.gate_per_key ? d.d : 1, d.n_head, d.n_t, d.n_s}, uniform(-1.0f, 0.0f));
                             Tensor* beta = b.input(DType::F32, {1, d.n_head, d.n_t, d.n_s}, uniform(0.05f, 0.95f));
                             Tensor* state = b.input(DType::F32, {d.d, d.d, d.n_head, d.n_s}, uniform(-0.5f, 0.5f));
                             return xb::gated_delta_net(b.ctx(), q, k, v, g, beta, state);
                         },
                         [](const std::vector<RefArray>& in) {
                             return exact::gated_delta_net(in[0], in[1], in[2], in[3], in[4], in[5]);
                         },
                         kTolF32Reduce});
    }
    // Qwen3-Next's chain: q and k L2-normalised per head (strided views of one projection) first.
    cases.push_back({"gated_delta_net_l2_normed_views_f32",
                     [](CaseBuilder& b) {
                         Tensor* qk = b.input(DType::F32, {16, 4, 3, 1});  // q's 2 heads, then k's
                         const size_t head = qk->nb[1];
                         Tensor* q = xb::view(b.ctx(), qk, {16, 2, 3, 1}, {head, qk->nb[2], qk->nb[3]}, 0);
                         Tensor* k = xb::view(b.ctx(), qk, {16, 2, 3, 1}, {head, qk->nb[2], qk->nb[3]}, 2 * head);
                         Tensor* v = b.input(DType::F32, {16, 4, 3, 1});
                         Tensor* g = b.input(DType::F32, {1, 4, 3, 1}, uniform(-1.0f, 0.0f));
                         Tensor* beta = b.input(DType::F32, {1, 4, 3, 1}, uniform(0.05f, 0.95f));
                         Tensor* state = b.input(DType::F32, {16, 16, 4, 1}, uniform(-0.5f, 0.5f));
                         return xb::gated_delta_net(b.ctx(), xb::l2_norm(b.ctx(), q, 1e-6f), xb::l2_norm(b.ctx(), k, 1e-6f), v, g, beta, state);
                     },
                     [](const std::vector<RefArray>& in) {
                         const RefArray q = exact::l2_norm(exact::strided_view(in[0], {16, 2, 3, 1}, {1, 16, 64, 192}, 0), 1e-6);
                         const RefArray k = exact::l2_norm(exact::strided_view(in[0], {16, 2, 3, 1}, {1, 16, 64, 192}, 32), 1e-6);
                         return exact::gated_delta_net(q, k, in[1], in[2], in[3], in[4]);
                     },
                     kTolF32Reduce});
}

}  // namespace

std::vector<OpCase> recurrent_cases() {
    std::vector<OpCase> cases;
    add_ssm_conv_cases(cases);
    add_ssm_scan_cases(cases);
    add_gated_delta_net_cases(cases);
    return cases;
}

}  // namespace xb::opcheck
