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

// DeepSeek V3's group-limited choice: the scores of the groups other than each token's
// n_group_used best (a group scored by the sum of its two best) set to -inf, as llama.cpp's
// build_moe_ffn does it. selection [n_expert, t] -> [n_expert, t].
Tensor* keep_best_groups(Context& ctx, const ExpertParams& e, const LayerNames& n, Tensor* selection) {
    const int64_t t = selection->ne[1], per_group = e.n_expert / e.n_group;
    Tensor* groups = n.step(reshape(ctx, selection, {per_group, e.n_group, t, 1}), "ffn_moe_groups", "reshaped");
    Tensor* best_two = n.step(top_k(ctx, groups, 2), "ffn_moe_group_best", "top_k");  // i32 [2, n_group, t]
    Tensor* columns = n.step(reshape(ctx, groups, {1, per_group, e.n_group, t}), "ffn_moe_groups", "as columns");
    Tensor* best_scores = n.step(get_rows(ctx, columns, best_two), "ffn_moe_group_best", "scores");  // [1, 2, n_group, t]
    Tensor* group_scores = n.step(sum_rows(ctx, reshape(ctx, best_scores, {2, e.n_group, t, 1})), "ffn_moe_group_scores", "sum");
    group_scores = n(reshape(ctx, group_scores, {e.n_group, t, 1, 1}), "ffn_moe_group_scores");
    Tensor* kept = n(top_k(ctx, group_scores, e.n_group_used), "ffn_moe_group_topk");  // i32 [n_group_used, t]
    Tensor* kept_rows = n.step(get_rows(ctx, groups, kept), "ffn_moe_probs_masked", "kept groups");
    Tensor* none = n.step(scale(ctx, groups, 0.0f, -std::numeric_limits<float>::infinity()), "ffn_moe_probs_masked", "-inf");
    Tensor* masked = n.step(set_rows(ctx, none, kept_rows, kept), "ffn_moe_probs_masked", "set_rows");
    return n(reshape(ctx, masked, {e.n_expert, t, 1, 1}), "ffn_moe_probs_masked");
}

// The shared experts' gated FFN (DeepSeek), named ffn_*_shexp and ffn_shexp; times
// sigmoid(x . gate_inp_shexp) per token where the layer has that gate (Qwen3.5-MoE).
Tensor* shared_experts(Context& ctx, const LayerNames& n, const LayerWeights& w, Tensor* x) {
    Tensor* up = n(mul_mat(ctx, w.up_shexp, x), "ffn_up_shexp");
    Tensor* act = nullptr;
    if (w.gate_shexp == nullptr) {  // Nemotron-H MoE: relu², no gate
        act = n(sqr(ctx, n(relu(ctx, up), "ffn_shexp_relu")), "ffn_shexp_relu_sqr");
    } else {
        Tensor* gate = n(mul_mat(ctx, w.gate_shexp, x), "ffn_gate_shexp");
        act = n(glu_split(ctx, gate, up, GluOp::SwiGlu), "ffn_shexp_swiglu");
    }
    Tensor* out = n(mul_mat(ctx, w.down_shexp, act), "ffn_shexp");
    if (w.gate_inp_shexp == nullptr) return out;
    Tensor* weight = n(sigmoid(ctx, n(mul_mat(ctx, w.gate_inp_shexp, x), "shared_expert_gate")), "shared_expert_gate_sigmoid");  // [1, t]
    return n(mul(ctx, out, weight), "ffn_shexp_gated");
}

}  // namespace

Tensor* moe_ffn(Context& ctx, const DecoderParams& p, const LayerNames& n, const LayerWeights& w, Tensor* x, GluOp glu) {
    const ExpertParams& e = p.experts;
    const int64_t t = x->ne[1], n_embd = x->ne[0];
    Tensor* logits = n(mul_mat(ctx, w.router, x), "ffn_moe_logits");  // [n_expert, t]
    if (w.router_b != nullptr) logits = n(add(ctx, logits, w.router_b), "ffn_moe_logits_biased");
    Tensor* probs = logits;
    if (e.gating == ExpertGating::Softmax) probs = n(soft_max(ctx, logits), "ffn_moe_probs");
    if (e.gating == ExpertGating::Sigmoid) probs = n(sigmoid(ctx, logits), "ffn_moe_probs");
    // What chooses the experts: the probabilities, biased (the bias does not weight them), within
    // the best groups.
    Tensor* selection = probs;
    if (w.exp_probs_b != nullptr) selection = n(add(ctx, probs, w.exp_probs_b), "ffn_moe_probs_biased");
    if (e.n_group > 1) selection = keep_best_groups(ctx, e, n, selection);
    Tensor* chosen = n(top_k(ctx, selection, e.n_used), "ffn_moe_topk");  // i32 [n_used, t]
    // top_k is a view of an argsort, named as llama.cpp's; a builder error leaves a placeholder
    // with no source (a hostile file's integer router), reported once the graph is built.
    if (chosen->src[0] != nullptr) n.step(chosen->src[0], "ffn_moe_topk", "argsort");

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
    Tensor* act = nullptr;
    if (w.gate_exps == nullptr) {  // Nemotron-H MoE: relu², no gate
        act = n(sqr(ctx, n.step(relu(ctx, up), "ffn_moe_relu_sqr", "relu")), "ffn_moe_relu_sqr");
    } else {
        Tensor* gate = n(mul_mat_id(ctx, w.gate_exps, col, chosen), "ffn_moe_gate");
        if (w.gate_exps_b != nullptr) gate = n(add_id(ctx, gate, w.gate_exps_b, chosen), "ffn_moe_gate_biased");
        act = glu == GluOp::SwiGluOai ? n(swiglu_oai(ctx, gate, up, kOaiAlpha, kOaiLimit), "ffn_moe_swiglu_oai")
                                      : n(glu_split(ctx, gate, up, glu), "ffn_moe_swiglu");
    }
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
    out = n(out, "ffn_moe_out");
    if (w.up_shexp != nullptr) out = n(add(ctx, out, shared_experts(ctx, n, w, x)), "ffn_out");
    return out;
}

}  // namespace xb::decoder
