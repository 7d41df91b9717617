#include "models/moe_ffn.hpp"

#include <limits>
#include <string>

#include "core/ops.hpp"

namespace xb::decoder {

namespace {

// gpt-oss's clamped SwiGLU constants (fixed by the architecture, not in its files).
constexpr float kOaiAlpha = 1.702f;
constexpr float kOaiLimit = 7.0f;
// The smallest normal f16: a sum of chosen weights is clamped to it before dividing by it.
constexpr float kMinWeightSum = 6.103515625e-5f;

}  // namespace

Tensor* moe_ffn(Context& ctx, const DecoderParams& p, const LayerNames& n, const LayerWeights& w, Tensor* x) {
    const ExpertParams& e = p.experts;
    const int64_t t = x->ne[1], n_embd = x->ne[0];
    Tensor* logits = n(mul_mat(ctx, w.router, x), "ffn_moe_logits");  // [n_expert, t]
    if (w.router_b != nullptr) logits = n(add(ctx, logits, w.router_b), "ffn_moe_logits_biased");
    Tensor* probs = e.gating == ExpertGating::Softmax ? n(soft_max(ctx, logits), "ffn_moe_probs") : logits;
    Tensor* chosen = n(top_k(ctx, probs, e.n_used), "ffn_moe_topk");  // i32 [n_used, t]
    n.step(chosen->src[0], "ffn_moe_topk", "argsort");

    // The chosen experts' probabilities, [1, n_used, t].
    Tensor* per_expert = n.step(reshape(ctx, probs, {1, e.n_expert, t, 1}), "ffn_moe_probs", "reshaped");
    Tensor* weights = n(get_rows(ctx, per_expert, chosen), "ffn_moe_weights");
    if (e.gating == ExpertGating::SoftmaxOfChosen) {
        weights = n(reshape(ctx, soft_max(ctx, reshape(ctx, weights, {e.n_used, t, 1, 1})), {1, e.n_used, t, 1}),
                    "ffn_moe_weights_softmax");
    }
    if (e.normalize) {
        Tensor* flat = reshape(ctx, weights, {e.n_used, t, 1, 1});
        Tensor* sum = n(clamp(ctx, sum_rows(ctx, flat), kMinWeightSum, std::numeric_limits<float>::infinity()), "ffn_moe_weights_sum");
        weights = n(reshape(ctx, div(ctx, flat, sum), {1, e.n_used, t, 1}), "ffn_moe_weights_norm");
    }
    if (e.weights_scale != 1.0f) weights = n(scale(ctx, weights, e.weights_scale), "ffn_moe_weights_scaled");

    // Each token's column, once per chosen expert (mul_mat_id broadcasts a single column).
    Tensor* col = n.step(reshape(ctx, x, {n_embd, 1, t, 1}), "ffn_moe_in", "reshaped");
    Tensor* up = n(mul_mat_id(ctx, w.up_exps, col, chosen), "ffn_moe_up");  // [n_ff, n_used, t]
    if (w.up_exps_b != nullptr) up = n(add_id(ctx, up, w.up_exps_b, chosen), "ffn_moe_up_biased");
    Tensor* gate = n(mul_mat_id(ctx, w.gate_exps, col, chosen), "ffn_moe_gate");
    if (w.gate_exps_b != nullptr) gate = n(add_id(ctx, gate, w.gate_exps_b, chosen), "ffn_moe_gate_biased");
    Tensor* act = p.ffn_glu == GluOp::SwiGluOai ? n(swiglu_oai(ctx, gate, up, kOaiAlpha, kOaiLimit), "ffn_moe_swiglu_oai")
                                                : n(glu_split(ctx, gate, up, p.ffn_glu), "ffn_moe_swiglu");
    Tensor* down = n(mul_mat_id(ctx, w.down_exps, act, chosen), "ffn_moe_down");  // [n_embd, n_used, t]
    if (w.down_exps_b != nullptr) down = n(add_id(ctx, down, w.down_exps_b, chosen), "ffn_moe_down_biased");
    Tensor* weighted = n(mul(ctx, down, weights), "ffn_moe_weighted");

    // The sum over the chosen experts: one [n_embd, t] view per slot, added in slot order.
    Tensor* out = nullptr;
    for (int slot = 0; slot < e.n_used; ++slot) {
        const std::string s = std::to_string(slot);
        Tensor* v = n.step(view_2d(ctx, weighted, n_embd, t, weighted->nb[2], static_cast<size_t>(slot) * weighted->nb[1]),
                           "ffn_moe_weighted", ("slot " + s).c_str());
        out = out == nullptr ? v : n.step(add(ctx, out, v), "ffn_moe_out", ("+ slot " + s).c_str());
    }
    if (e.n_used == 1) out = cont(ctx, out);
    return n(out, "ffn_moe_out");
}

}  // namespace xb::decoder
