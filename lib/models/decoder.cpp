#include "models/decoder.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "core/names.hpp"
#include "core/ops.hpp"
#include "models/architectures.hpp"
#include "models/decoder_blocks.hpp"
#include "models/decoder_weights.hpp"
#include "models/layer_graph.hpp"
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
    const double moe = 3.0 * e * (static_cast<double>(experts.n_ff) * experts.n_used + experts.shared_ff()) + e * experts.n_expert;
    // A recurrent layer's projections: LFM2's short convolution (in 3 n_embd wide, out), Mamba-2's
    // ssm_in and ssm_out, or the delta net's q/k/v, z, alpha, beta and out.
    const double state_space_in = ssm.kind == SsmKind::Mamba2 ? static_cast<double>(ssm.in_rows())
                                                              : static_cast<double>(ssm.conv_channels() + ssm.d_inner + 2 * ssm.n_head);
    const double recurrent_mixing = ssm.enabled() ? e * state_space_in + static_cast<double>(ssm.d_inner) * e : 4.0 * e * e;
    double total = 0.0;
    // The last layer's FFN and the output projection see only the rows whose logits are computed.
    const double outputs = n_logits();
    for (int il = 0; il < n_layers; ++il) {
        const double ffn_rows = il == n_layers - 1 ? outputs : t;
        if (layer_is_ffn_only(il)) {  // up and down, no gate
            const double ungated_moe = 2.0 * e * (static_cast<double>(experts.n_ff) * experts.n_used + experts.shared_ff()) + e * experts.n_expert;
            total += 2.0 * ffn_rows * (layer_has_experts(il) ? ungated_moe : 2.0 * e * layer_n_ff[static_cast<size_t>(il)]);
            continue;
        }
        const double mixing = layer_is_recurrent(il) ? recurrent_mixing : projections + scores;
        const double ffn = layer_n_ff.empty() ? (layer_has_experts(il) ? moe : dense) : 0.0;  // Nemotron-H: mixers alone
        total += 2.0 * t * mixing + 2.0 * ffn_rows * ffn;
    }
    return total + 2.0 * outputs * e * n_vocab;
}

std::vector<Tensor*> LayerWeights::all() const {
    std::vector<Tensor*> w;
    for (Tensor* t : {attn_norm, wqkv, bqkv, wq, wk, wv, bq, bk, bv, q_norm, k_norm, wo, bo, sinks, attn_post_norm, ffn_norm,
                      w_gate, w_up, w_down, b_up, b_down, ffn_post_norm, router, router_b, gate_exps, up_exps, down_exps, gate_exps_b,
                      up_exps_b, down_exps_b, exp_probs_b, gate_shexp, up_shexp, down_shexp, gate_inp_shexp, wq_a, q_a_norm, wq_b, wkv_a_mqa,
                      kv_a_norm, wk_b, wv_b, conv_in, conv_kernel, conv_out, ssm_in, ssm_conv, ssm_conv_b, ssm_dt_b, ssm_a, ssm_d,
                      ssm_norm, ssm_out, delta_qkv, delta_z, ssm_beta, ssm_alpha, ssm_beta_alpha}) {
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
    for (const std::vector<Tensor*>* caches : {&k_cache, &v_cache, &conv_state, &ssm_state}) {
        for (Tensor* c : *caches) {
            if (c != nullptr) w.push_back(c);
        }
    }
    return w;
}

std::vector<Tensor*> Decoder::inputs() const {
    std::vector<Tensor*> in = {tokens};
    if (positions != nullptr) in.push_back(positions);
    in.push_back(kq_mask);
    if (kq_mask_swa != nullptr) in.push_back(kq_mask_swa);
    if (out_ids != nullptr) in.push_back(out_ids);
    if (kv_idxs != nullptr) in.push_back(kv_idxs);
    if (state_ids != nullptr) in.push_back(state_ids);
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

Status invalid(const std::string& why) { return Status(StatusCode::InvalidArgument, "decoder: " + why); }

bool any_recurrent(const DecoderParams& p) {
    for (int il = 0; il < p.n_layers; ++il) {
        if (p.layer_is_recurrent(il)) return true;
    }
    return false;
}

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
    if (!p.recurrent.empty() && p.recurrent.size() < static_cast<size_t>(p.n_layers)) {
        return invalid("the recurrent layers' list has " + std::to_string(p.recurrent.size()) + " layers, the model " +
                       std::to_string(p.n_layers));
    }
    if (!p.layer_n_ff.empty() && p.layer_n_ff.size() < static_cast<size_t>(p.n_layers)) {
        return invalid("the per-layer feed-forward sizes cover " + std::to_string(p.layer_n_ff.size()) + " layers, the model has " +
                       std::to_string(p.n_layers));
    }
    if (any_recurrent(p) && p.conv_kernel < 2) {
        return invalid("recurrent layers need a convolution of at least 2 inputs (conv_kernel " + std::to_string(p.conv_kernel) + ")");
    }
    const SsmParams& s = p.ssm;
    if (s.enabled() && (s.d_state < 1 || s.n_head < 1 || s.n_group < 1 || s.d_inner % s.n_head != 0 || s.n_head % s.n_group != 0 ||
                        s.d_inner % s.n_group != 0)) {
        return invalid("Mamba-2: the " + std::to_string(s.n_head) + " heads must divide the inner size " + std::to_string(s.d_inner) +
                       " and be divided by the " + std::to_string(s.n_group) + " groups, with a positive state size (" +
                       std::to_string(s.d_state) + ")");
    }
    return Status::ok();
}

}  // namespace

Result<Decoder> build_model(Context& ctx, const Architecture& arch, const DecoderParams& p, const decoder::WeightSource& source) {
    using decoder::named;
    XB_RETURN_IF_ERROR(check_params(p));
    if (!source.types) {
        const int64_t n_ff = p.has_experts() ? p.experts.n_ff : p.n_ff;
        XB_RETURN_IF_ERROR(check_weight_rows("decoder", p.weight_type, {{"n_embd", p.n_embd}, {"n_ff", n_ff}}));
        XB_RETURN_IF_ERROR(check_weight_rows("decoder", p.weight_type, {{"n_head x head size", p.n_embd_q()}}));
    }
    Decoder m{};
    m.tokens = named(ctx.new_tensor(DType::I32, {p.n_tokens}), "tokens");
    if (p.rope) m.positions = named(ctx.new_tensor(DType::I32, {p.n_tokens}), "positions");
    m.kq_mask = named(ctx.new_tensor(DType::F16, {p.n_cells(), p.n_tokens}), "kq_mask");
    bool any_slides = false;
    for (int il = 0; il < p.n_layers; ++il) any_slides = any_slides || p.swa.slides(il);
    if (any_slides) m.kq_mask_swa = named(ctx.new_tensor(DType::F16, {p.n_cells(), p.n_tokens}), "kq_mask_swa");
    if (p.n_logits() < p.n_tokens) m.out_ids = named(ctx.new_tensor(DType::I32, {p.n_logits()}), "inp_out_ids");
    bool any_attends = false;
    for (int il = 0; il < p.n_layers; ++il) any_attends = any_attends || p.layer_attends(il);
    if (p.n_kv > 0 && any_attends) m.kv_idxs = named(ctx.new_tensor(DType::I32, {p.n_tokens}), "inp_kv_idxs");
    if (p.ssm.enabled() && p.ssm.kind == SsmKind::Mamba2 && any_recurrent(p)) m.state_ids = named(ctx.new_tensor(DType::I32, {1}), "inp_s_ids");
    for (Tensor* in : m.inputs()) in->set_input();
    decoder::WeightMaker make(ctx, p, source);
    m.tok_embd = make.matrix("token_embd.weight", p.n_embd, p.n_vocab);
    for (int il = 0; il < p.n_layers; ++il) {
        m.layers.push_back(make_layer_weights(arch, make, il));
        if (!p.recurrent.empty()) {
            // A recurrent layer's state is read even without a cache (it starts empty: zeros).
            const bool recurrent = p.layer_is_recurrent(il);
            const std::string l = std::to_string(il);
            m.conv_state.push_back(recurrent ? named(ctx.new_tensor(DType::F32, {p.conv_kernel - 1, p.conv_channels()}), "cache_r_l" + l)
                                             : nullptr);
            if (p.ssm.enabled()) {
                const SsmParams& s = p.ssm;
                m.ssm_state.push_back(recurrent ? named(ctx.new_tensor(DType::F32, {s.d_state, s.head_dim(), s.n_head}), "cache_s_l" + l)
                                                : nullptr);
            }
        }
        if (p.n_kv > 0 && !p.layer_attends(il)) {
            m.k_cache.push_back(nullptr);
            m.v_cache.push_back(nullptr);
        } else if (p.n_kv > 0 && p.mla.enabled()) {
            // One latent and the key's rope part per position; the values are the latent.
            const int64_t row = p.mla.kv_lora_rank + p.rope_dims();
            m.k_cache.push_back(named(ctx.new_tensor(DType::F32, {row, p.n_cells()}), "cache_k_l" + std::to_string(il)));
        } else if (p.n_kv > 0) {
            const std::string l = std::to_string(il);
            m.k_cache.push_back(named(ctx.new_tensor(DType::F32, {p.n_embd_kv(), p.n_cells()}), "cache_k_l" + l));
            m.v_cache.push_back(named(ctx.new_tensor(DType::F32, {p.n_embd_kv(), p.n_cells()}), "cache_v_l" + l));
        }
    }
    m.out_norm = make.vector(std::string(arch.output_norm), p.n_embd);
    m.output = p.tied_output ? m.tok_embd : make.matrix("output.weight", p.n_embd, p.n_vocab);
    if (arch.output_bias && make.has("output.bias")) m.output_b = make.vector("output.bias", p.n_vocab);
    if (!p.rope_factors.empty()) m.rope_factors = make.vector(p.rope_factors, p.rope_dims() / 2);

    Tensor* x = named(get_rows(ctx, m.tok_embd, m.tokens), "inp_embd");
    if (p.embd_scale > 0.0f) x = named(scale(ctx, x, p.embd_scale), "inp_scaled");
    for (int il = 0; il < p.n_layers; ++il) x = arch.layer(decoder::LayerGraph(ctx, p, m, il, arch.ffn_glu), x);
    x = decoder::norm(ctx, x, m.out_norm, p.rms_eps, "result_norm");
    Tensor* logits = mul_mat(ctx, m.output, x);
    if (m.output_b != nullptr) logits = add(ctx, named(logits, "result_output (mul_mat)"), m.output_b);
    if (p.final_softcap > 0.0f) logits = decoder::softcap(ctx, named(logits, "result_output (uncapped)"), p.final_softcap, "result_output");
    if (p.logit_scale > 0.0f) logits = scale(ctx, named(logits, "result_output (unscaled)"), 1.0f / p.logit_scale);
    m.logits = named(logits, "result_output");
    m.logits->set_output();
    m.graph_outputs.push_back(m.logits);
    if (!ctx.ok()) return ctx.status();
    return m;
}

Result<Decoder> build_decoder(Context& ctx, const DecoderParams& p, const WeightTypes& types) {
    decoder::WeightSource source;
    source.types = types;
    return build_model(ctx, llama_architecture(), p, source);
}

}  // namespace xb
