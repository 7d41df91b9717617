#include "models/layer_graph.hpp"

#include <cmath>

#include "core/ops.hpp"
#include "models/mla_attention.hpp"
#include "models/moe_ffn.hpp"

namespace xb::decoder {

namespace {

// A layer weight's role: its name without "blk.<il>." and ".weight", the name llama.cpp gives the
// node it scales ("ffn_norm").
std::string role_of(const Tensor& weight) {
    const std::string& name = weight.name;
    const size_t start = name.find('.', name.find('.') + 1) + 1;
    return name.substr(start, name.rfind(".weight") - start);
}

}  // namespace

Tensor* LayerGraph::norm(Tensor* x, Tensor* weight, const std::string& name) const {
    return decoder::norm(ctx, x, weight, p.rms_eps, name + n.suffix);
}

QkvViews LayerGraph::qkv(Tensor* x) const {
    const int64_t hd = p.head_dim(), t = p.n_tokens;
    if (w.wqkv != nullptr) {
        Tensor* fused = n(mul_mat(ctx, w.wqkv, x), "wqkv");
        if (w.bqkv != nullptr) fused = n(add(ctx, fused, w.bqkv), "bqkv");
        return split_qkv(ctx, p, n, fused);
    }
    QkvViews h{};
    h.q = project(ctx, n, "Qcur", w.wq, w.bq, x, hd, p.n_head, t);
    h.k = project(ctx, n, "Kcur", w.wk, w.bk, x, hd, p.n_head_kv, t);
    h.v = project(ctx, n, "Vcur", w.wv, w.bv, x, hd, p.n_head_kv, t);
    return h;
}

QkvViews LayerGraph::qk_norms(const QkvViews& h) const {
    return {decoder::norm(ctx, h.q, w.q_norm, p.rms_eps, "Qcur_normed" + n.suffix),
            decoder::norm(ctx, h.k, w.k_norm, p.rms_eps, "Kcur_normed" + n.suffix), h.v};
}

QkvViews LayerGraph::rope(const QkvViews& h) const {
    h.v->name = "Vcur" + n.suffix;  // the last step of Vcur is its reshape or view (llama.cpp names it so too)
    if (!p.rope) return {n(h.q, "Qcur"), n(h.k, "Kcur"), h.v};
    const RopeParams rope_params = layer_rope(p, il);
    Tensor* q = xb::rope(ctx, h.q, m.positions, rope_params, m.rope_factors);
    Tensor* k = n(xb::rope(ctx, h.k, m.positions, rope_params, m.rope_factors), "Kcur");
    q = p.q_scale > 0.0f ? n(scale(ctx, n.step(q, "Qcur", "rope"), p.q_scale), "Qcur") : n(q, "Qcur");
    return {q, k, h.v};
}

Tensor* LayerGraph::self_attention(const QkvViews& h) const {
    Tensor* out = n(mul_mat(ctx, w.wo, attend_heads(h)), "attn_out");
    if (w.bo != nullptr) out = n(add(ctx, n.step(out, "attn_out", "mul_mat"), w.bo), "attn_out");
    return out;
}

Tensor* LayerGraph::attend_heads(const QkvViews& h) const {
    Tensor* q = n(permute(ctx, h.q, {0, 2, 1, 3}), "q");
    Tensor* k = nullptr;
    Tensor* v = nullptr;
    if (p.n_kv > 0) {
        k = through_cache(ctx, p, n, "Kcur", m.k_cache[static_cast<size_t>(il)], h.k, m.kv_idxs, m.graph_outputs);
        v = through_cache(ctx, p, n, "Vcur", m.v_cache[static_cast<size_t>(il)], h.v, m.kv_idxs, m.graph_outputs);
    } else {
        k = n(permute(ctx, h.k, {0, 2, 1, 3}), "k");
        v = n(permute(ctx, h.v, {0, 2, 1, 3}), "v");
    }
    Tensor* mask = p.swa.slides(il) ? m.kq_mask_swa : m.kq_mask;
    return attention(ctx, p, n, q, k, v, mask, w.sinks);
}

Tensor* LayerGraph::gated_attention(Tensor* x) const {
    const int64_t hd = p.head_dim(), heads = p.n_head, t = p.n_tokens;
    const size_t f = sizeof(float);
    Tensor* qg = n(mul_mat(ctx, w.wq, x), "Qcur_full");  // per head: its query, then its gate
    const size_t head = static_cast<size_t>(hd) * f, row = qg->nb[1];
    QkvViews h{};
    h.q = n.step(view(ctx, qg, {hd, heads, t, 1}, {2 * head, row, row * static_cast<size_t>(t)}, 0), "Qcur", "view");
    Tensor* gate = n.step(view(ctx, qg, {hd, heads, t, 1}, {2 * head, row, row * static_cast<size_t>(t)}, head), "gate", "view");
    gate = n(reshape(ctx, cont(ctx, gate), {p.n_embd_q(), t, 1, 1}), "gate_reshaped");
    h.k = project(ctx, n, "Kcur", w.wk, nullptr, x, hd, p.n_head_kv, t);
    h.v = project(ctx, n, "Vcur", w.wv, nullptr, x, hd, p.n_head_kv, t);
    Tensor* heads_out = attend_heads(rope(qk_norms(h)));
    Tensor* gated = n(mul(ctx, heads_out, n(sigmoid(ctx, gate), "gate_sigmoid")), "attn_gated");
    return n(mul_mat(ctx, w.wo, gated), "attn_output");
}

Tensor* LayerGraph::unit_rows(Tensor* x, const std::string& name) const {
    // x / sqrt(sum x^2 + eps), as llama.cpp builds it (transformers' l2norm): rms_norm with eps / n,
    // scaled by 1/sqrt(n). (ggml's l2_norm, x / max(|x|, eps), rounds otherwise.)
    const float row = static_cast<float>(x->ne[0]);
    Tensor* normed = n.step(rms_norm(ctx, x, p.rms_eps / row), name, "rms_norm");
    return n(scale(ctx, normed, 1.0f / std::sqrt(row)), name);
}

Tensor* LayerGraph::key_head_slice(Tensor* grouped, int64_t rows, int64_t offset, const std::string& name, const std::string& flat_name) const {
    const int64_t heads = grouped->ne[1], t = grouped->ne[2];
    Tensor* slice = n.step(view(ctx, grouped, {rows, heads, t, 1}, {grouped->nb[1], grouped->nb[2], grouped->nb[3]},
                                static_cast<size_t>(offset) * grouped->nb[0]),
                           name, "view");
    return n(reshape(ctx, n.step(cont(ctx, slice), name, "cont"), {rows * heads, t, 1, 1}), flat_name);
}

std::pair<Tensor*, Tensor*> LayerGraph::delta_projections(Tensor* x) const {
    if (w.delta_qkv != nullptr) {
        return {n(mul_mat(ctx, w.delta_qkv, x), "linear_attn_qkv_mixed"), n(mul_mat(ctx, w.delta_z, x), "z")};
    }
    // The older fused layout: per key head its q, k, then its value heads' v and z.
    const SsmParams& s = p.ssm;
    const int64_t t = p.n_tokens, dk = s.d_state, hk = s.n_group, vz = s.d_inner / hk;
    Tensor* mixed = n(mul_mat(ctx, w.ssm_in, x), "linear_attn_mixed_qkvz");
    Tensor* grouped = n.step(reshape(ctx, mixed, {2 * dk + 2 * vz, hk, t, 1}), "linear_attn_mixed_qkvz", "per key head");
    Tensor* q = key_head_slice(grouped, dk, 0, "query", "query_flat");
    Tensor* k = key_head_slice(grouped, dk, dk, "key", "key_flat");
    Tensor* v = key_head_slice(grouped, vz, 2 * dk, "value", "value_flat");
    Tensor* z = key_head_slice(grouped, vz, 2 * dk + vz, "z", "z_flat");
    Tensor* qkv = n(concat(ctx, n(concat(ctx, q, k, 0), "qk_mixed"), v, 0), "qkv_mixed");
    return {qkv, z};
}

std::pair<Tensor*, Tensor*> LayerGraph::delta_gates(Tensor* x) const {
    const int64_t t = p.n_tokens, hv = p.ssm.n_head;
    Tensor* beta = nullptr;
    Tensor* alpha = nullptr;
    if (w.ssm_beta_alpha != nullptr) {
        // Per key head: its value heads' betas, then their alphas.
        const int64_t per_key = hv / p.ssm.n_group;
        Tensor* ba = n(mul_mat(ctx, w.ssm_beta_alpha, x), "linear_attn_mixed_ba");
        Tensor* grouped = n.step(reshape(ctx, ba, {2 * per_key, p.ssm.n_group, t, 1}), "linear_attn_mixed_ba", "per key head");
        beta = key_head_slice(grouped, per_key, 0, "b", "b");
        alpha = key_head_slice(grouped, per_key, per_key, "a", "a");
    } else {
        beta = n(mul_mat(ctx, w.ssm_beta, x), "beta");
        alpha = n(mul_mat(ctx, w.ssm_alpha, x), "alpha");
    }
    Tensor* strength = n(sigmoid(ctx, beta), "beta_sigmoid");
    strength = n.step(reshape(ctx, strength, {1, hv, t, 1}), "beta_sigmoid", "per head");
    Tensor* biased = n(add(ctx, alpha, w.ssm_dt_b), "alpha_biased");
    Tensor* decay = n(mul(ctx, n(softplus(ctx, biased), "a_softplus"), w.ssm_a), "gate");  // log-decay per head and token
    decay = n.step(reshape(ctx, decay, {1, hv, t, 1}), "gate", "per head");
    return {strength, decay};
}

Tensor* LayerGraph::gated_delta_net(Tensor* x) const {
    const SsmParams& s = p.ssm;
    const int64_t t = p.n_tokens, dk = s.d_state, hk = s.n_group, hv = s.n_head, dv = s.head_dim();
    const size_t f = sizeof(float);
    const auto [qkv, z] = delta_projections(x);  // [conv_channels, t], [d_inner, t]
    const auto [beta, decay] = delta_gates(x);

    Tensor* conv = n(silu(ctx, causal_conv(qkv, w.ssm_conv, "conv")), "conv_output_silu");  // [conv_channels, t, 1]
    const size_t crow = conv->nb[1], cseq = conv->nb[2];
    Tensor* q = n.step(view(ctx, conv, {dk, hk, t, 1}, {static_cast<size_t>(dk) * f, crow, cseq}, 0), "q_conv", "view");
    Tensor* k = n.step(view(ctx, conv, {dk, hk, t, 1}, {static_cast<size_t>(dk) * f, crow, cseq}, static_cast<size_t>(dk * hk) * f),
                       "k_conv", "view");
    Tensor* v = n(view(ctx, conv, {dv, hv, t, 1}, {static_cast<size_t>(dv) * f, crow, cseq}, static_cast<size_t>(2 * dk * hk) * f), "v_conv");
    q = unit_rows(q, "q_conv");
    k = unit_rows(k, "k_conv");
    if (s.grouped_heads && hk != hv) {
        // Each key head repeated for its value heads in turn (the op reads head h % hk otherwise).
        const auto to_value_heads = [&](Tensor* a, const std::string& name) {
            Tensor* one = n.step(reshape(ctx, a, {dk, 1, hk, t}), name, "per key head");
            Tensor* repeated = n.step(repeat_4d(ctx, one, {dk, hv / hk, hk, t}), name, "repeated");
            return n(reshape(ctx, repeated, {dk, hv, t, 1}), name + "_predelta");
        };
        q = to_value_heads(q, "q_conv");
        k = to_value_heads(k, "k_conv");
    }

    Tensor* state = m.ssm_state[static_cast<size_t>(il)];  // [dv, dv, hv]
    Tensor* out = n(xb::gated_delta_net(ctx, q, k, v, decay, beta, state), "gated_delta_net");
    const int64_t y_count = dv * hv * t;
    if (p.n_kv > 0) {
        Tensor* last = n.step(view_1d(ctx, out, state->nelements(), static_cast<size_t>(y_count) * f), "ssm_state", "view");
        m.graph_outputs.push_back(named(cpy(ctx, last, state), state->name + " (copy of gated_delta_net" + n.suffix + ")"));
    }
    Tensor* o = n(view(ctx, out, {dv, hv, t, 1}, {static_cast<size_t>(dv) * f, static_cast<size_t>(dv * hv) * f, static_cast<size_t>(y_count) * f}, 0),
                  "attn_output_heads");
    Tensor* normed = norm(o, w.ssm_norm, "ssm_norm");
    Tensor* gated = n(mul(ctx, normed, n(silu(ctx, n.step(reshape(ctx, z, {dv, hv, t, 1}), "z", "per head")), "z_silu")), "ssm_norm_gated");
    Tensor* flat = n(reshape(ctx, gated, {s.d_inner, t, 1, 1}), "final_output");
    return n(mul_mat(ctx, w.ssm_out, flat), "linear_attn_out");
}

Tensor* LayerGraph::latent_attention(Tensor* x) const { return mla_attention(ctx, p, m, n, il, x); }

Tensor* LayerGraph::causal_conv(Tensor* inputs, Tensor* kernel, const std::string& prefix) const {
    const int64_t channels = inputs->ne[0], t = p.n_tokens, kept = p.conv_kernel - 1;
    // Each channel's inputs over time: the state's, then the batch's.
    Tensor* state = m.conv_state[static_cast<size_t>(il)];
    Tensor* window = n(concat(ctx, state, LayerNames::step_of(transpose(ctx, inputs), *inputs, "transposed"), 0), prefix + "_window");
    if (p.n_kv > 0) {
        // The state the next batch reads: the window's last conv_kernel - 1 inputs.
        Tensor* last = n.step(view_2d(ctx, window, kept, channels, window->nb[1], static_cast<size_t>(t) * sizeof(float)),
                              prefix + "_state", "view");
        m.graph_outputs.push_back(named(cpy(ctx, last, state), state->name + " (copy of " + prefix + "_window" + n.suffix + ")"));
    }
    // Files may keep the kernel in f16; ssm_conv reads f32.
    if (kernel->type != DType::F32) kernel = n(cast(ctx, kernel, DType::F32), prefix + "_kernel_f32");
    return n(ssm_conv(ctx, window, kernel), prefix + "_conv");  // [channels, t, 1]
}

Tensor* LayerGraph::short_conv(Tensor* x) const {
    const int64_t e = p.n_embd, t = p.n_tokens;
    Tensor* bcx = n(mul_mat(ctx, w.conv_in, x), "conv_in_proj");  // [3 n_embd, t]: b, c, x
    const size_t row = bcx->nb[1], part = static_cast<size_t>(e) * sizeof(float);
    Tensor* b = n.step(view_2d(ctx, bcx, e, t, row, 0), "conv_b", "view");
    Tensor* c = n.step(view_2d(ctx, bcx, e, t, row, part), "conv_c", "view");
    Tensor* xs = n.step(view_2d(ctx, bcx, e, t, row, 2 * part), "conv_x", "view");
    Tensor* conv = causal_conv(n(mul(ctx, b, xs), "conv_bx"), w.conv_kernel, "conv");
    Tensor* y = n(mul(ctx, c, n.step(reshape(ctx, conv, {e, t, 1, 1}), "conv_conv", "flat")), "conv_y");
    return n(mul_mat(ctx, w.conv_out, y), "conv_out");
}

Tensor* LayerGraph::mamba2(Tensor* x) const {
    const SsmParams& s = p.ssm;
    const int64_t t = p.n_tokens, hd = s.head_dim(), heads = s.n_head, groups = s.n_group, d_state = s.d_state;
    const size_t f = sizeof(float);
    Tensor* zxbcdt = n(mul_mat(ctx, w.ssm_in, x), "ssm_in");  // [in_rows, t]: z, x, B, C, dt
    const size_t row = zxbcdt->nb[1];
    Tensor* z = n.step(view(ctx, zxbcdt, {hd, heads, t, 1}, {hd * f, row, row * static_cast<size_t>(t)}, 0), "ssm_z", "view");
    Tensor* xbc = n(view_2d(ctx, zxbcdt, s.conv_channels(), t, row, static_cast<size_t>(s.d_inner) * f), "ssm_xBC");
    Tensor* dt = n.step(view_2d(ctx, zxbcdt, heads, t, row, static_cast<size_t>(s.d_inner + s.conv_channels()) * f), "ssm_dt", "view");

    // x, B and C convolved over time with their state, biased, through silu.
    Tensor* conv = causal_conv(xbc, w.ssm_conv, "ssm_conv");
    if (w.ssm_conv_b != nullptr) conv = n(add(ctx, n.step(conv, "ssm_conv", "unbiased"), w.ssm_conv_b), "ssm_conv");
    conv = n(silu(ctx, conv), "ssm_conv_silu");  // [conv_channels, t, 1]
    const size_t crow = conv->nb[1], cseq = conv->nb[2];
    Tensor* xs = n.step(view(ctx, conv, {hd, heads, t, 1}, {hd * f, crow, cseq}, 0), "ssm_x", "view");
    Tensor* B = n.step(view(ctx, conv, {d_state, groups, t, 1}, {static_cast<size_t>(d_state) * f, crow, cseq},
                            static_cast<size_t>(s.d_inner) * f),
                       "ssm_B", "view");
    Tensor* C = n.step(view(ctx, conv, {d_state, groups, t, 1}, {static_cast<size_t>(d_state) * f, crow, cseq},
                            static_cast<size_t>(s.d_inner + groups * d_state) * f),
                       "ssm_C", "view");

    // The scan from the layer's state; its output holds y, then the final state.
    Tensor* steps = n(add(ctx, n.step(cont(ctx, dt), "ssm_dt", "cont"), w.ssm_dt_b), "ssm_dt_biased");  // [heads, t]
    Tensor* state = m.ssm_state[static_cast<size_t>(il)];
    Tensor* scan = n(ssm_scan(ctx, state, xs, steps, w.ssm_a, B, C, m.state_ids), "ssm_scan");
    const int64_t y_count = hd * heads * t;
    if (p.n_kv > 0) {
        Tensor* last = n.step(view_1d(ctx, scan, state->nelements(), static_cast<size_t>(y_count) * f), "ssm_state", "view");
        m.graph_outputs.push_back(named(cpy(ctx, last, state), state->name + " (copy of ssm_scan" + n.suffix + ")"));
    }
    Tensor* y = n.step(view(ctx, scan, {hd, heads, t, 1}, {hd * f, static_cast<size_t>(hd * heads) * f, static_cast<size_t>(y_count) * f}, 0),
                       "ssm_y", "view");
    y = n(add(ctx, y, n(mul(ctx, xs, w.ssm_d), "ssm_x_d")), "mamba2_y_add_d");
    y = n(glu_split(ctx, n.step(cont(ctx, z), "ssm_z", "cont"), y, GluOp::SwiGlu), "ssm_y_gated");  // silu(z) * y
    // RMS norm within each group of d_inner / n_group channels.
    Tensor* grouped = n.step(reshape(ctx, y, {s.d_inner / groups, groups, t, 1}), "ssm_y_gated", "grouped");
    Tensor* normed = norm(grouped, w.ssm_norm, "ssm_norm");
    Tensor* flat = n.step(reshape(ctx, normed, {s.d_inner, t, 1, 1}), "ssm_norm", "flat");
    return n(mul_mat(ctx, w.ssm_out, flat), "mamba_out");
}

Tensor* LayerGraph::residual_scaled(Tensor* x) const {
    if (p.residual_scale <= 0.0f) return x;
    Tensor* scaled = named(scale(ctx, x, p.residual_scale), x->name);
    LayerNames::step_of(x, *scaled, "unscaled");
    return scaled;
}

Tensor* LayerGraph::attn_residual(Tensor* attn, Tensor* x, const char* name) const {
    // The last layer's FFN (and everything after it) needs only the rows whose logits are asked
    // for: the attention output and the residual shrink to them here, as in llama.cpp.
    if (il == p.n_layers - 1 && m.out_ids != nullptr) {
        attn = get_rows(ctx, attn, m.out_ids);
        x = get_rows(ctx, x, m.out_ids);
    }
    return n(add(ctx, attn, x), name);
}

Tensor* LayerGraph::relu_squared_ffn(Tensor* x) const {
    Tensor* up = n(mul_mat(ctx, w.w_up, x), "ffn_up");
    if (w.b_up != nullptr) up = n(add(ctx, up, w.b_up), "ffn_up_b");
    Tensor* act = n(sqr(ctx, n(relu(ctx, up), "ffn_relu")), "ffn_sqr(relu)");
    Tensor* down = n(mul_mat(ctx, w.w_down, act), w.b_down != nullptr ? "ffn_down" : "ffn_out");
    return w.b_down != nullptr ? n(add(ctx, down, w.b_down), "ffn_out") : down;
}

Tensor* LayerGraph::ffn(Tensor* x) const {
    if (w.router != nullptr) return moe_ffn(ctx, p, n, w, x, glu);
    return gated_ffn(ctx, n, x, w.w_gate, w.w_up, w.w_down, glu);
}

Tensor* LayerGraph::layer_out(Tensor* ffn, Tensor* h) const { return n(add(ctx, ffn, h), "l_out"); }

Tensor* LayerGraph::residual_ffn(Tensor* attn, Tensor* x) const {
    if (w.attn_post_norm != nullptr) attn = norm(attn, w.attn_post_norm, "attn_post_norm");
    Tensor* h = attn_residual(attn, x);
    Tensor* out = ffn(norm(h, w.ffn_norm, role_of(*w.ffn_norm)));
    if (w.ffn_post_norm != nullptr) out = norm(out, w.ffn_post_norm, "ffn_post_norm");
    return layer_out(out, h);
}

}  // namespace xb::decoder
