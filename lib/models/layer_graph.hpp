// The graph of one layer, built by its architecture (models/arch_<name>.cpp) from these steps,
// as llama.cpp's model files build theirs from llm_graph_context's: norms, the Q/K/V projections,
// per-head norms, rope, attention through the layer's cache, the feed-forward network or the
// experts, and the residual adds. Every step names its nodes as llama.cpp's graph does
// (models/decoder_blocks.hpp), so an architecture's layer is a handful of calls, e.g. Qwen3's:
//
//   Tensor* attn = g.self_attention(g.rope(g.qk_norms(g.qkv(g.norm(x, g.w.attn_norm, "attn_norm")))));
//   return g.residual_ffn(attn, x);
#pragma once

#include <string>
#include <utility>

#include "core/context.hpp"
#include "core/tensor.hpp"
#include "models/decoder.hpp"
#include "models/decoder_blocks.hpp"

namespace xb::decoder {

class LayerGraph {
public:
    // glu: the architecture's feed-forward activation (Architecture::ffn_glu).
    LayerGraph(Context& ctx, const DecoderParams& p, Decoder& m, int il, GluOp glu)
        : ctx(ctx), p(p), m(m), il(il), w(m.layers[static_cast<size_t>(il)]), n{"-" + std::to_string(il)}, glu(glu) {}

    // rms_norm(x) * weight, named `name`-<il>.
    Tensor* norm(Tensor* x, Tensor* weight, const std::string& name) const;
    // x's Q, K and V as heads [head size, heads, n_tokens]: one fused product or three, with the
    // biases the layer has.
    QkvViews qkv(Tensor* x) const;
    // rms_norm of each head of Q and K (Qcur_normed, Kcur_normed).
    QkvViews qk_norms(const QkvViews& h) const;
    // Q and K rope'd at the batch's positions with the layer's rope (the sliding layers' own base
    // and scale), then Q multiplied by the params' q_scale where it has one; only named Qcur and
    // Kcur where the params rope nothing (Granite 4.0-H).
    QkvViews rope(const QkvViews& h) const;
    // Attention of the heads over the layer's cache (the batch written into it first) or over the
    // batch alone, with the sliding-window mask on sliding layers and the layer's sinks, projected
    // by attn_output (and its bias): [n_embd, n_tokens], named attn_out.
    Tensor* self_attention(const QkvViews& h) const;
    // Latent attention of the normed x (models/mla_attention.hpp).
    Tensor* latent_attention(Tensor* x) const;
    // LFM2's gated short convolution of the normed x [n_embd, n_tokens]: b, c and x from one
    // in-projection, b * x convolved over time per channel (the layer's state holds the
    // conv_kernel - 1 inputs before the batch; with a cache the window's last ones go back into
    // it), times c, out-projected: [n_embd, n_tokens], named conv_out.
    Tensor* short_conv(Tensor* x) const;
    // Mamba-2's mixer of the normed x [n_embd, n_tokens] (DecoderParams::ssm): ssm_in to z, x, B,
    // C and dt; x, B and C convolved causally with the layer's convolution state, biased, through
    // silu; the selective scan from the layer's scan state (dt biased, softplus'd inside), plus
    // x D; times silu(z); an RMS norm per group; ssm_out: [n_embd, n_tokens], named mamba_out.
    // With a cache (n_kv > 0) both states go back for the next batch.
    Tensor* mamba2(Tensor* x) const;
    // Qwen3.5's and Qwen3-Next's gated delta net of the normed x [n_embd, n_tokens]: q, k and v from attn_qkv,
    // convolved causally with the layer's convolution state, through silu; q and k L2-normed per
    // head; the delta rule (gated_delta_net) from the layer's state with the decay A softplus(alpha
    // + dt bias) and the write strength sigmoid(beta); each head's output RMS-normed (ssm_norm) and
    // gated by silu(z) (attn_gate); ssm_out: [n_embd, n_tokens], named linear_attn_out. With a
    // cache (n_kv > 0) both states go back for the next batch. Where the layer's value heads are
    // grouped (SsmParams::grouped_heads), q and k are repeated to them head by head first.
    Tensor* gated_delta_net(Tensor* x) const;
    // Qwen3.5's full attention: attn_q gives each head's query and its output gate side by side;
    // Q/K norms, rope, attention through the cache, the output times sigmoid(gate), attn_output:
    // [n_embd, n_tokens], named attn_output.
    Tensor* gated_attention(Tensor* x) const;
    // x times the params' residual_scale (Granite), or x where it has none.
    Tensor* residual_scaled(Tensor* x) const;
    // The attention's output added to the layer's input, named `name`. On the last layer both
    // first shrink to the rows whose logits are computed (Decoder::out_ids), as llama.cpp does.
    Tensor* attn_residual(Tensor* attn, Tensor* x, const char* name = "ffn_inp") const;
    // The feed-forward network of the normed x: the experts where the layer has them
    // (models/moe_ffn.hpp), else the dense gated one, with the architecture's activation.
    Tensor* ffn(Tensor* x) const;
    // Nemotron-H's feed-forward network of the normed x: relu(up x + b)² through down (+ b), no
    // gate: [n_embd, n_tokens], named ffn_out.
    Tensor* relu_squared_ffn(Tensor* x) const;
    // The feed-forward network's output added to its input: l_out, the layer's output.
    Tensor* layer_out(Tensor* ffn, Tensor* h) const;
    // The rest of the pre-norm layer most architectures are, after the attention: h = x + attn,
    // then h + ffn(norm(h)), the norm's node named as its weight (ffn_norm; gpt-oss's
    // post_attention_norm). Where the layer has post-norms (Gemma: attn_post_norm, ffn_post_norm),
    // the attention's and the FFN's outputs are normed before their residual adds.
    Tensor* residual_ffn(Tensor* attn, Tensor* x) const;

private:
    // `inputs` [channels, n_tokens] convolved over time per channel by `kernel` [conv_kernel,
    // channels], after the layer's convolution state (the conv_kernel - 1 inputs before the batch;
    // with a cache the window's last ones go back into it): [channels, n_tokens, 1], the nodes
    // named `prefix`_window, _state, _conv.
    Tensor* causal_conv(Tensor* inputs, Tensor* kernel, const std::string& prefix) const;
    // Attention of the heads over the layer's cache (or the batch alone), before the output
    // projection: [n_embd_q, n_tokens].
    Tensor* attend_heads(const QkvViews& h) const;
    // The delta net's projections of x: the convolution's inputs q, k, v [conv_channels, n_tokens]
    // and the output gate z [d_inner, n_tokens], from attn_qkv and attn_gate or from the older
    // fused ssm_in (per key head: q, k, its value heads' v and z), put in attn_qkv's order.
    std::pair<Tensor*, Tensor*> delta_projections(Tensor* x) const;
    // Each value head's write strength sigmoid(beta) and log-decay A softplus(alpha + dt bias), both
    // [1, n_head, n_tokens, 1], from ssm_beta and ssm_alpha or from the fused ssm_ba.
    std::pair<Tensor*, Tensor*> delta_gates(Tensor* x) const;
    // Rows offset .. offset + rows of each key head's part of `grouped` [per key head, key heads,
    // n_tokens] (Qwen3-Next's fused projections), made contiguous: [rows x key heads, n_tokens],
    // the steps named `name`, the result `flat_name`.
    Tensor* key_head_slice(Tensor* grouped, int64_t rows, int64_t offset, const std::string& name, const std::string& flat_name) const;
    // Each row of x over its L2 norm: x / sqrt(sum x^2 + rms_eps), named `name`.
    Tensor* unit_rows(Tensor* x, const std::string& name) const;

public:

    Context& ctx;
    const DecoderParams& p;
    Decoder& m;
    const int il;
    const LayerWeights& w;
    const LayerNames n;
    const GluOp glu;
};

}  // namespace xb::decoder
