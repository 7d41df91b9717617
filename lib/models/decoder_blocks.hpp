// The low-level pieces the layers are built from (models/layer_graph.hpp composes them into the
// steps each architecture's layer calls): node naming as llama.cpp's graph names nodes, norms, the Q/K/V projections, the KV
// cache writes, attention (flash or by matrix products) and the gated feed-forward network
// (the mixture of experts is models/moe_ffn.hpp).
//
// Names: a layer's nodes carry llama.cpp's names with the layer as suffix (`attn_norm-0`,
// `Qcur-0`, `kq-0`, `ffn_out-0`). Where llama.cpp gives one name to successive nodes (the Q
// projection and its rope'd result are both `Qcur-0`), the last carries it and the earlier ones
// add their op: `Qcur-0 (mul_mat)`. Names are unique.
#pragma once

#include <string>
#include <vector>

#include "core/context.hpp"
#include "core/ops.hpp"
#include "core/tensor.hpp"
#include "models/decoder.hpp"

namespace xb::decoder {

Tensor* named(Tensor* t, const std::string& name);

// Names the nodes of one layer: "Qcur-0", and for the earlier nodes of the same value
// "Qcur-0 (mul_mat)".
struct LayerNames {
    std::string suffix;  // "-0"
    Tensor* operator()(Tensor* t, const std::string& name) const { return named(t, name + suffix); }
    Tensor* step(Tensor* t, const std::string& name, const char* op) const { return named(t, name + suffix + " (" + op + ")"); }
    // t, a step of the value `of` (named already): "<of's name> (op)".
    static Tensor* step_of(Tensor* t, const Tensor& of, const char* op) { return named(t, of.name + " (" + op + ")"); }
};

// rms_norm(x) * w, named `name` (the rms_norm node `name (rms_norm)`).
Tensor* norm(Context& ctx, Tensor* x, Tensor* w, float eps, const std::string& name);

// x @ w (+ b), reshaped to heads [head_dim, n_heads, n_tokens]: the projection for Qcur, Kcur or
// Vcur, named as the value's earlier steps.
Tensor* project(Context& ctx, const LayerNames& n, const char* what, Tensor* w, Tensor* b, Tensor* x, int64_t hd,
                int64_t heads, int64_t t);

// A fused QKV product [n_embd_q + 2 n_embd_kv, n_tokens] as the views Q, K and V of heads
// [head_dim, heads, n_tokens] (Phi-3's attn_qkv).
struct QkvViews {
    Tensor* q;
    Tensor* k;
    Tensor* v;
};
QkvViews split_qkv(Context& ctx, const DecoderParams& p, const LayerNames& n, Tensor* qkv);

// Writes the batch's k or v ([head_dim, heads, n_tokens], named `what`: "Kcur" or "Vcur") into
// the cache's cells that `cells` (i32 [n_tokens], the decoder's kv_idxs) names, and returns the
// whole cache as [head_dim, n_cells, heads], named k-<il> / v-<il>; the write is appended to
// `writes` (graph outputs, so that it runs first).
Tensor* through_cache(Context& ctx, const DecoderParams& p, const LayerNames& n, const char* what, Tensor* cache, Tensor* cur,
                      Tensor* cells, std::vector<Tensor*>& writes);

// Attention of q [d, n_tokens, n_head] over k [d, n_attended, n_head_kv] and v [dv,
// n_attended, n_head_kv] (any strides), the scores scaled by `scale` and soft-capped as the params
// say, with `sinks` (f32 [n_head], optional): flash_attn_ext, or mul_mat + soft_max_ext + mul_mat
// (params.flash_attn). Returns the heads' outputs [dv, n_head, n_tokens].
Tensor* attend(Context& ctx, const DecoderParams& p, const LayerNames& n, Tensor* q, Tensor* k, Tensor* v, Tensor* mask,
               Tensor* sinks, float scale);
// attend with the params' scale (1/sqrt(head size), or 1 where the variant scales Q itself),
// returned as [n_embd_q, n_tokens], named kqv_out-<il>.
Tensor* attention(Context& ctx, const DecoderParams& p, const LayerNames& n, Tensor* q, Tensor* k, Tensor* v, Tensor* mask,
                  Tensor* sinks);

// Layer il's rope: the global one, or the sliding layers' base and scale.
RopeParams layer_rope(const DecoderParams& p, int il);

// The gated feed-forward network down(act(gate(x)) * up(x)), named ffn_gate, ffn_up, ffn_<act>
// and ffn_out. gate == nullptr: `up` holds the gate's rows then the up's (Phi-3).
Tensor* gated_ffn(Context& ctx, const LayerNames& n, Tensor* x, Tensor* gate, Tensor* up, Tensor* down, GluOp op);

// c * tanh(x / c), Gemma's soft-capping, named `name` (the steps before it `name (scaled)` and
// `name (tanh)`).
Tensor* softcap(Context& ctx, Tensor* x, float c, const std::string& name);

}  // namespace xb::decoder
