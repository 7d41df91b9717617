// nemotron_h: NVIDIA's Nemotron-H (8B, 47B, 56B) and Nemotron Nano 2 (9B, 12B), a hybrid whose
// layers are each one of three: a Mamba-2 mixer (layer_graph.hpp's mamba2, with its convolution
// and scan states), attention without rope, or a feed-forward network alone (relu², no gate).
// Every layer is x + block(rms_norm(x)). The file marks them per layer: head_count_kv and
// feed_forward_length both 0 for Mamba-2, feed_forward_length 0 for attention, above 0 for the
// FFN (DecoderParams::layer_n_ff), as llama.cpp reads them.
//
// nemotron_h_moe (Nemotron 3 Nano 30B-A3B): the FFN layers are experts, down(relu(up x)²) without
// a gate, chosen by sigmoid scores with a selection bias (exp_probs_b), their weights normalised
// (expert_weights_norm) and scaled (expert_weights_scale), beside an ungated shared expert.
#include "models/arch_entries.hpp"
#include "models/arch_hparams.hpp"

#include <algorithm>

namespace xb::arch {

namespace {

Status read_layer_kinds(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    XB_RETURN_IF_ERROR(read_mamba2_sizes(md, a, p));
    if (p.layer_n_ff.empty()) {
        return md.error(*md.file().find_kv_entry(a + "feed_forward_length"),
                        "is one number: a nemotron_h model gives one per layer (0 for its Mamba-2 and attention layers)");
    }
    // head_count_kv 0 marked the Mamba-2 and the FFN layers recurrent (gguf_model.cpp); the FFN
    // layers are not.
    if (p.recurrent.empty()) p.recurrent.assign(static_cast<size_t>(p.n_layers), false);
    for (int il = 0; il < p.n_layers; ++il) {
        if (p.layer_is_ffn_only(il)) p.recurrent[static_cast<size_t>(il)] = false;
    }
    XB_ASSIGN_OR_RETURN(const double kq_scale, md.non_negative(a + "attention.scale", 0.0));
    p.kq_scale = static_cast<float>(kq_scale);
    p.rope = false;
    return Status::ok();
}

Status read_hparams(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    XB_RETURN_IF_ERROR(refuse_experts(a, p));
    return read_layer_kinds(md, a, p);
}

Status read_moe_hparams(const GgufMetadata& md, const std::string& a, DecoderParams& p) {
    XB_RETURN_IF_ERROR(read_layer_kinds(md, a, p));
    XB_ASSIGN_OR_RETURN(const int64_t latent, md.integer(a + "moe_latent_size", 0, 0, 1 << 20));
    if (latent > 0) {
        return md.error(*md.file().find_kv_entry(a + "moe_latent_size"),
                        "is " + std::to_string(latent) + ": experts in a latent space of their own (Nemotron 3 Super) are not supported");
    }
    XB_RETURN_IF_ERROR(read_experts(md, a, p, "expert_feed_forward_length"));
    ExpertParams& e = p.experts;
    XB_ASSIGN_OR_RETURN(const int64_t shared, md.integer(a + "expert_shared_feed_forward_length", 0, 0, 1 << 18));
    XB_ASSIGN_OR_RETURN(e.normalize, md.boolean(a + "expert_weights_norm", false));
    XB_ASSIGN_OR_RETURN(const int64_t groups, md.integer(a + "expert_group_count", 0, 0, e.n_expert));
    XB_ASSIGN_OR_RETURN(const int64_t groups_used, md.integer(a + "expert_group_used_count", 0, 0, std::max<int64_t>(groups, 0)));
    e.gating = ExpertGating::Sigmoid;
    e.selection_bias = true;
    e.ungated = true;
    e.n_shared = shared > 0 ? 1 : 0;
    e.n_ff_shared = static_cast<int>(shared);
    e.n_group = groups > 1 ? static_cast<int>(groups) : 0;
    e.n_group_used = groups > 1 ? static_cast<int>(groups_used) : 0;
    return Status::ok();
}

void layer_weights(decoder::LayerWeightMaker& make, LayerWeights& w) {
    const DecoderParams& p = make.params();
    const int il = make.layer();
    if (p.layer_is_ffn_only(il) && p.has_experts()) {
        w.attn_norm = make.vector("attn_norm.weight", p.n_embd);
        make.experts(w);
    } else if (p.layer_is_ffn_only(il)) {
        const int64_t e = p.n_embd, f = p.layer_n_ff[static_cast<size_t>(il)];
        w.attn_norm = make.vector("attn_norm.weight", e);
        w.w_up = make.matrix("ffn_up.weight", e, f);
        w.b_up = make.vector("ffn_up.bias", f, decoder::Need::Optional);
        w.w_down = make.matrix("ffn_down.weight", f, e);
        w.b_down = make.vector("ffn_down.bias", e, decoder::Need::Optional);
    } else if (p.layer_is_recurrent(il)) {
        w.attn_norm = make.vector("attn_norm.weight", p.n_embd);
        make.mamba2(w);
    } else {
        make.qkv(w, decoder::Need::Optional);
        make.attn_output(w, decoder::Need::Optional);
    }
}

Tensor* layer(const decoder::LayerGraph& g, Tensor* x) {
    Tensor* in = g.norm(x, g.w.attn_norm, "attn_norm");
    Tensor* block = nullptr;
    if (g.p.layer_is_ffn_only(g.il)) {
        block = g.p.has_experts() ? g.ffn(in) : g.relu_squared_ffn(in);
    } else if (g.p.layer_is_recurrent(g.il)) {
        block = g.mamba2(in);
    } else {
        block = g.self_attention(g.rope(g.qkv(in)));
    }
    return g.attn_residual(block, x, "nemotron_h_block_out");
}

}  // namespace

const Architecture kNemotronH{.name = "nemotron_h", .read_hparams = read_hparams, .layer_weights = layer_weights, .layer = layer,
                              .hybrid = true};
const Architecture kNemotronHMoe{.name = "nemotron_h_moe", .read_hparams = read_moe_hparams, .layer_weights = layer_weights,
                                 .layer = layer, .hybrid = true};

}  // namespace xb::arch
