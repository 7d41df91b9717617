#include "models/decoder.hpp"

#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include "core/names.hpp"
#include "core/ops.hpp"
#include "models/decoder_blocks.hpp"
#include "models/decoder_weights.hpp"
#include "models/mla_attention.hpp"
#include "models/moe_ffn.hpp"
#include "models/weight_rows.hpp"

namespace xb {

double DecoderParams::matmul_flops() const {
    const double e = n_embd, t = n_tokens, h = n_head, attended = n_attended();
    // Multiply-adds per token of the attention's projections and of its scores and weighted sums.
    double projections = 0.0, scores = 0.0;
    if (mla.enabled()) {
        const double rope = rope_dims(), latent = mla.kv_lora_rank, head_q = mla.qk_nope + rope;
        projections = (mla.q_lora_rank > 0 ? e * mla.q_lora_rank + mla.q_lora_rank * h * head_q : e * h * head_q) +
                      e * (latent + rope) + h * mla.qk_nope * latent + h * latent * mla.v_head + h * mla.v_head * e;
        scores = h * attended * (latent + rope + latent);
    } else {
        const double q = static_cast<double>(n_embd_q()), kv = static_cast<double>(n_embd_kv());
        projections = e * q * 2 + e * kv * 2;
        scores = 2.0 * attended * q;  // q k^T and (kq) v over all heads
    }
    // A token goes through n_used experts of n_ff each, the shared ones and the router, or the dense FFN.
    const double dense = 3.0 * e * n_ff;
    const double moe = 3.0 * e * experts.n_ff * (experts.n_used + experts.n_shared) + e * experts.n_expert;
    double total = 0.0;
    // The last layer's FFN and the output projection see only the rows whose logits are computed.
    const double outputs = n_logits();
    for (int il = 0; il < n_layers; ++il) {
        const double ffn_rows = il == n_layers - 1 ? outputs : t;
        total += 2.0 * t * (projections + scores) + 2.0 * ffn_rows * (layer_has_experts(il) ? moe : dense);
    }
    return total + 2.0 * outputs * e * n_vocab;
}

std::vector<Tensor*> LayerWeights::all() const {
    std::vector<Tensor*> w;
    for (Tensor* t : {attn_norm, wqkv, bqkv, wq, wk, wv, bq, bk, bv, q_norm, k_norm, wo, bo, sinks, attn_post_norm, ffn_norm,
                      w_gate, w_up, w_down, ffn_post_norm, router, router_b, gate_exps, up_exps, down_exps, gate_exps_b,
                      up_exps_b, down_exps_b, exp_probs_b, gate_shexp, up_shexp, down_shexp, wq_a, q_a_norm, wq_b, wkv_a_mqa,
                      kv_a_norm, wk_b, wv_b}) {
        if (t != nullptr) w.push_back(t);
    }
    return w;
}

std::vector<Tensor*> Decoder::weights() const {
    std::vector<Tensor*> w = {tok_embd, out_norm};
    if (output != tok_embd) w.push_back(output);
    if (output_b != nullptr) w.push_back(output_b);
    if (rope_factors != nullptr) w.push_back(rope_factors);
    for (const LayerWeights& l : layers) {
        const std::vector<Tensor*> lw = l.all();
        w.insert(w.end(), lw.begin(), lw.end());
    }
    w.insert(w.end(), k_cache.begin(), k_cache.end());
    w.insert(w.end(), v_cache.begin(), v_cache.end());
    return w;
}

std::vector<Tensor*> Decoder::inputs() const {
    std::vector<Tensor*> in = {tokens, positions, kq_mask};
    if (kq_mask_swa != nullptr) in.push_back(kq_mask_swa);
    if (out_ids != nullptr) in.push_back(out_ids);
    return in;
}

std::vector<int32_t> batch_positions(const DecoderParams& params) {
    std::vector<int32_t> pos(static_cast<size_t>(params.n_tokens));
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int32_t>(params.n_attended() - params.n_tokens + static_cast<int>(i));
    return pos;
}

std::vector<int32_t> output_row_ids(const DecoderParams& params) {
    std::vector<int32_t> rows(static_cast<size_t>(params.n_logits()));
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int32_t>(params.n_tokens - params.n_logits() + static_cast<int>(i));
    return rows;
}

namespace {

std::string number_text(float v) {
    std::ostringstream out;
    out << v;
    return out.str();
}

}  // namespace

std::string DecoderParams::variant_text() const {
    std::vector<std::string> parts;
    if (embd_scale > 0.0f) parts.push_back("embeddings x" + number_text(embd_scale));
    if (mla.enabled()) {
        parts.push_back("latent attention (q rank " + std::to_string(mla.q_lora_rank) + ", kv rank " + std::to_string(mla.kv_lora_rank) +
                        ", heads of " + std::to_string(mla.qk_nope) + "+" + std::to_string(rope_dims()) + " / " +
                        std::to_string(mla.v_head) + ")");
    }
    if (n_dense_lead > 0) parts.push_back(std::to_string(n_dense_lead) + " leading dense layers");
    if (fused_qkv) parts.push_back("fused qkv");
    if (qkv_bias) parts.push_back("qkv bias");
    if (qk_norm) parts.push_back("q/k norms");
    if (q_scale > 0.0f) parts.push_back("q x" + number_text(q_scale));
    if (attn_softcap > 0.0f) parts.push_back("scores soft-capped at " + number_text(attn_softcap));
    if (attn_sinks) parts.push_back("attention sinks");
    if (attn_out_bias) parts.push_back("output projection bias");
    if (post_norms) parts.push_back("post-attention and post-FFN norms");
    if (fused_gate_up) parts.push_back("fused gate/up");
    parts.push_back(std::string(ffn_glu == GluOp::GeGlu ? "geglu" : ffn_glu == GluOp::SwiGluOai ? "clamped swiglu" : "swiglu") + " FFN");
    if (final_softcap > 0.0f) parts.push_back("logits soft-capped at " + number_text(final_softcap));
    if (output_bias) parts.push_back("output bias");
    return join_names(parts, parts.size());
}

std::string DecoderParams::window_text() const {
    if (swa.window <= 0) return "";
    std::string layers;
    int shown = 0;
    for (int il = 0; il < n_layers && shown < 3; ++il) {
        if (swa.slides(il)) layers += (shown++ ? ", " : "") + std::to_string(il);
    }
    int sliding = 0;
    for (int il = 0; il < n_layers; ++il) sliding += swa.slides(il) ? 1 : 0;
    const std::string share = !swa.layers.empty() ? std::to_string(sliding) + " of " + std::to_string(n_layers) + " layers, by the file's list"
                              : swa.pattern == 0  ? "every layer"
                                                  : std::to_string(swa.pattern - 1) + " in " + std::to_string(swa.pattern);
    return std::to_string(swa.window) + " positions on layers " + layers + ", ... (" + share + " slide), their rope base " +
           number_text(swa.rope_freq_base) + " scale " + number_text(swa.rope_freq_scale);
}

std::string DecoderParams::experts_text() const {
    if (!has_experts()) return "";
    const char* gating = experts.gating == ExpertGating::Softmax ? "softmax then top-k"
                         : experts.gating == ExpertGating::Sigmoid ? "sigmoid then top-k"
                                                                    : "top-k then softmax";
    std::string out = std::to_string(experts.n_expert) + ", " + std::to_string(experts.n_used) + " per token, feed-forward " +
                      std::to_string(experts.n_ff) + " each, " + gating;
    if (experts.selection_bias) out += " (chosen with a bias)";
    if (experts.n_group > 1) out += " within the best " + std::to_string(experts.n_group_used) + " of " + std::to_string(experts.n_group) + " groups";
    if (experts.n_shared > 0) out += ", " + std::to_string(experts.n_shared) + " shared";
    if (experts.normalize) out += ", normalised";
    if (experts.weights_scale != 1.0f) out += ", weights x" + number_text(experts.weights_scale);
    if (experts.biases) out += ", biases";
    return out;
}

std::vector<float> causal_mask_values(int n_kv, int n_tokens, int window, int n_cells) {
    const int cells = std::max(n_cells, n_kv);
    std::vector<float> mask(static_cast<size_t>(cells) * n_tokens);
    for (int i = 0; i < n_tokens; ++i) {
        const int query = i + (n_kv - n_tokens);  // the query's position
        for (int j = 0; j < cells; ++j) {
            const bool hidden = j > query || (window > 0 && query - j >= window);  // empty cells: j > query
            mask[static_cast<size_t>(i) * cells + j] = hidden ? -std::numeric_limits<float>::infinity() : 0.0f;
        }
    }
    return mask;
}

namespace {

using decoder::LayerNames;
using decoder::named;

// Q, K and V of the layer as heads [head_dim, heads, n_tokens], normed per head and rope'd where
// the variant does.
decoder::QkvViews qkv(Context& ctx, const DecoderParams& p, const Decoder& m, const LayerNames& n, const LayerWeights& w,
                      Tensor* x, int il) {
    const int64_t hd = p.head_dim(), t = p.n_tokens;
    decoder::QkvViews h{};
    if (w.wqkv != nullptr) {
        Tensor* fused = n(mul_mat(ctx, w.wqkv, x), "wqkv");
        if (w.bqkv != nullptr) fused = n(add(ctx, fused, w.bqkv), "bqkv");
        h = decoder::split_qkv(ctx, p, n, fused);
    } else {
        h.q = decoder::project(ctx, n, "Qcur", w.wq, w.bq, x, hd, p.n_head, t);
        h.k = decoder::project(ctx, n, "Kcur", w.wk, w.bk, x, hd, p.n_head_kv, t);
        h.v = decoder::project(ctx, n, "Vcur", w.wv, w.bv, x, hd, p.n_head_kv, t);
    }
    if (w.q_norm != nullptr) {
        h.q = decoder::norm(ctx, h.q, w.q_norm, p.rms_eps, "Qcur_normed" + n.suffix);
        h.k = decoder::norm(ctx, h.k, w.k_norm, p.rms_eps, "Kcur_normed" + n.suffix);
    }
    const RopeParams rope_params = decoder::layer_rope(p, il);
    h.q = rope(ctx, h.q, m.positions, rope_params, m.rope_factors);
    h.k = n(rope(ctx, h.k, m.positions, rope_params, m.rope_factors), "Kcur");
    h.q = p.q_scale > 0.0f ? n(scale(ctx, n.step(h.q, "Qcur", "rope"), p.q_scale), "Qcur") : n(h.q, "Qcur");
    h.v->name = "Vcur" + n.suffix;  // the last step of Vcur is its reshape or view (llama.cpp names it so too)
    return h;
}

// The attention half of a layer: x -> attention output projected back to [n_embd, n_tokens].
Tensor* attention_block(Context& ctx, const DecoderParams& p, Decoder& m, const LayerNames& n, int il, Tensor* x) {
    const LayerWeights& w = m.layers[static_cast<size_t>(il)];
    Tensor* cur = decoder::norm(ctx, x, w.attn_norm, p.rms_eps, "attn_norm" + n.suffix);
    if (p.mla.enabled()) return decoder::mla_attention(ctx, p, m, n, il, cur);
    decoder::QkvViews h = qkv(ctx, p, m, n, w, cur, il);
    Tensor* q = n(permute(ctx, h.q, {0, 2, 1, 3}), "q");
    Tensor* k = nullptr;
    Tensor* v = nullptr;
    if (p.n_kv > 0) {
        k = decoder::through_cache(ctx, p, n, "Kcur", m.k_cache[static_cast<size_t>(il)], h.k, m.graph_outputs);
        v = decoder::through_cache(ctx, p, n, "Vcur", m.v_cache[static_cast<size_t>(il)], h.v, m.graph_outputs);
    } else {
        k = n(permute(ctx, h.k, {0, 2, 1, 3}), "k");
        v = n(permute(ctx, h.v, {0, 2, 1, 3}), "v");
    }
    Tensor* mask = p.swa.slides(il) ? m.kq_mask_swa : m.kq_mask;
    Tensor* attn = decoder::attention(ctx, p, n, q, k, v, mask, w.sinks);
    Tensor* out = n(mul_mat(ctx, w.wo, attn), "attn_out");
    if (w.bo != nullptr) out = n(add(ctx, n.step(out, "attn_out", "mul_mat"), w.bo), "attn_out");
    if (w.attn_post_norm != nullptr) out = decoder::norm(ctx, out, w.attn_post_norm, p.rms_eps, "attn_post_norm" + n.suffix);
    return out;
}

// The feed-forward half: h -> the dense FFN's or the experts' output.
Tensor* ffn_block(Context& ctx, const DecoderParams& p, const LayerWeights& w, const LayerNames& n, Tensor* h) {
    Tensor* in = decoder::norm(ctx, h, w.ffn_norm, p.rms_eps, p.ffn_norm_name + n.suffix);
    Tensor* out = w.router != nullptr ? decoder::moe_ffn(ctx, p, n, w, in)
                                      : decoder::gated_ffn(ctx, n, in, w.w_gate, w.w_up, w.w_down, p.ffn_glu);
    if (w.ffn_post_norm != nullptr) out = decoder::norm(ctx, out, w.ffn_post_norm, p.rms_eps, "ffn_post_norm" + n.suffix);
    return out;
}

Tensor* layer(Context& ctx, const DecoderParams& p, Decoder& m, int il, Tensor* x) {
    const LayerNames n{"-" + std::to_string(il)};
    Tensor* attn = attention_block(ctx, p, m, n, il, x);
    // The last layer's FFN (and everything after it) needs only the rows whose logits are asked
    // for: the attention output and the residual shrink to them here, as in llama.cpp.
    if (il == p.n_layers - 1 && m.out_ids != nullptr) {
        attn = get_rows(ctx, attn, m.out_ids);
        x = get_rows(ctx, x, m.out_ids);
    }
    Tensor* h = n(add(ctx, attn, x), "ffn_inp");
    Tensor* ffn = ffn_block(ctx, p, m.layers[static_cast<size_t>(il)], n, h);
    return n(add(ctx, ffn, h), "l_out");
}

Status invalid(const std::string& why) { return Status(StatusCode::InvalidArgument, "decoder: " + why); }

Status check_params(const DecoderParams& p) {
    if (p.n_layers < 1 || p.n_embd < 1 || p.n_head < 1 || p.n_head_kv < 1 || p.n_ff < 1 || p.n_tokens < 1 ||
        p.n_vocab < 1 || p.n_embd_head < 0) {
        return invalid("every size must be positive");
    }
    if (p.n_kv != 0 && p.n_kv < p.n_tokens) return invalid("n_kv must be 0 (no cache) or at least n_tokens");
    if (p.n_head % p.n_head_kv != 0) {
        return invalid("n_head_kv (" + std::to_string(p.n_head_kv) + ") must divide n_head (" + std::to_string(p.n_head) + ")");
    }
    if ((p.n_embd_head == 0 && p.n_embd % p.n_head != 0) || p.head_dim() % 2 != 0) {
        return invalid("n_embd (" + std::to_string(p.n_embd) + ") must divide into n_head (" + std::to_string(p.n_head) +
                       ") heads of even size");
    }
    if (p.rope_n_dims < 0 || p.rope_n_dims > p.head_dim() || p.rope_n_dims % 2 != 0) {
        return invalid("rope n_dims (" + std::to_string(p.rope_n_dims) + ") must be even and at most the head size " +
                       std::to_string(p.head_dim()));
    }
    const ExpertParams& e = p.experts;
    if (e.n_expert < 0 || (e.n_expert > 0 && (e.n_used < 1 || e.n_used > e.n_expert || e.n_ff < 1))) {
        return invalid("experts: n_used (" + std::to_string(e.n_used) + ") must be 1 to n_expert (" + std::to_string(e.n_expert) +
                       ") and each expert's n_ff positive");
    }
    if (p.n_outputs < 0 || p.n_outputs > p.n_tokens) {
        return invalid("n_outputs (" + std::to_string(p.n_outputs) + ") must be 0 (every position) to n_tokens (" +
                       std::to_string(p.n_tokens) + ")");
    }
    if (p.swa.window < 0 || p.swa.pattern < 0) return invalid("the sliding window and its pattern must not be negative");
    if (!p.swa.layers.empty() && p.swa.layers.size() < static_cast<size_t>(p.n_layers)) {
        return invalid("the sliding window's per-layer list has " + std::to_string(p.swa.layers.size()) + " layers, the model " +
                       std::to_string(p.n_layers));
    }
    if (e.n_group > 0 && (e.n_expert % e.n_group != 0 || e.n_expert / e.n_group < 2 || e.n_group_used < 1 ||
                          e.n_group_used > e.n_group || e.n_used > e.n_group_used * (e.n_expert / e.n_group))) {
        return invalid("expert groups: " + std::to_string(e.n_group) + " groups must divide the " + std::to_string(e.n_expert) +
                       " experts into groups of at least 2, and the " + std::to_string(e.n_group_used) +
                       " groups used (at least 1) must hold the " + std::to_string(e.n_used) + " experts used");
    }
    const MlaParams& a = p.mla;
    if (a.enabled() && (a.q_lora_rank < 0 || a.qk_nope < 1 || a.v_head < 1 || p.rope_dims() < 2)) {
        return invalid("latent attention: qk_nope, v_head and the rope dims must be positive");
    }
    return Status::ok();
}

}  // namespace

Result<Decoder> build_decoder(Context& ctx, const DecoderParams& p, const WeightTypes& types) {
    XB_RETURN_IF_ERROR(check_params(p));
    if (!types) {
        const int64_t n_ff = p.has_experts() ? p.experts.n_ff : p.n_ff;
        XB_RETURN_IF_ERROR(check_weight_rows("decoder", p.weight_type, {{"n_embd", p.n_embd}, {"n_ff", n_ff}}));
        XB_RETURN_IF_ERROR(check_weight_rows("decoder", p.weight_type, {{"n_head x head size", p.n_embd_q()}}));
    }
    Decoder m{};
    m.tokens = named(ctx.new_tensor(DType::I32, {p.n_tokens}), "tokens");
    m.positions = named(ctx.new_tensor(DType::I32, {p.n_tokens}), "positions");
    m.kq_mask = named(ctx.new_tensor(DType::F16, {p.n_cells(), p.n_tokens}), "kq_mask");
    bool any_slides = false;
    for (int il = 0; il < p.n_layers; ++il) any_slides = any_slides || p.swa.slides(il);
    if (any_slides) m.kq_mask_swa = named(ctx.new_tensor(DType::F16, {p.n_cells(), p.n_tokens}), "kq_mask_swa");
    if (p.n_logits() < p.n_tokens) m.out_ids = named(ctx.new_tensor(DType::I32, {p.n_logits()}), "inp_out_ids");
    for (Tensor* in : m.inputs()) in->set_input();
    decoder::WeightMaker make(ctx, p, types);
    m.tok_embd = make.matrix("token_embd.weight", p.n_embd, p.n_vocab);
    for (int il = 0; il < p.n_layers; ++il) {
        m.layers.push_back(make.layer(il));
        if (p.n_kv > 0 && p.mla.enabled()) {
            // One latent and the key's rope part per position; the values are the latent.
            const int64_t row = p.mla.kv_lora_rank + p.rope_dims();
            m.k_cache.push_back(named(ctx.new_tensor(DType::F32, {row, p.n_cells()}), "cache_k_l" + std::to_string(il)));
        } else if (p.n_kv > 0) {
            const std::string l = std::to_string(il);
            m.k_cache.push_back(named(ctx.new_tensor(DType::F32, {p.n_embd_kv(), p.n_cells()}), "cache_k_l" + l));
            m.v_cache.push_back(named(ctx.new_tensor(DType::F32, {p.n_embd_kv(), p.n_cells()}), "cache_v_l" + l));
        }
    }
    m.out_norm = make.vector("output_norm.weight", p.n_embd);
    m.output = p.tied_output ? m.tok_embd : make.matrix("output.weight", p.n_embd, p.n_vocab);
    if (p.output_bias) m.output_b = make.vector("output.bias", p.n_vocab);
    if (!p.rope_factors.empty()) m.rope_factors = make.vector(p.rope_factors, p.rope_dims() / 2);

    Tensor* x = named(get_rows(ctx, m.tok_embd, m.tokens), "inp_embd");
    if (p.embd_scale > 0.0f) x = named(scale(ctx, x, p.embd_scale), "inp_scaled");
    for (int il = 0; il < p.n_layers; ++il) x = layer(ctx, p, m, il, x);
    x = decoder::norm(ctx, x, m.out_norm, p.rms_eps, "result_norm");
    Tensor* logits = mul_mat(ctx, m.output, x);
    if (m.output_b != nullptr) logits = add(ctx, named(logits, "result_output (mul_mat)"), m.output_b);
    if (p.final_softcap > 0.0f) logits = decoder::softcap(ctx, named(logits, "result_output (uncapped)"), p.final_softcap, "result_output");
    m.logits = named(logits, "result_output");
    m.logits->set_output();
    m.graph_outputs.push_back(m.logits);
    if (!ctx.ok()) return ctx.status();
    return m;
}

}  // namespace xb
