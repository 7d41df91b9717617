#include "models/model_text.hpp"

#include <sstream>
#include <vector>

#include "core/names.hpp"

namespace xb {

namespace {

std::string number_text(float v) {
    std::ostringstream out;
    out << v;
    return out.str();
}

const char* glu_text(GluOp glu) {
    return glu == GluOp::GeGlu ? "geglu" : glu == GluOp::SwiGluOai ? "clamped swiglu" : "swiglu";
}

}  // namespace

std::string variant_text(const Architecture& arch, const DecoderParams& p, const LayerWeights& w, bool output_bias) {
    std::vector<std::string> parts;
    if (p.embd_scale > 0.0f) parts.push_back("embeddings x" + number_text(p.embd_scale));
    if (p.mla.enabled()) {
        const MlaParams& a = p.mla;
        parts.push_back("latent attention (q rank " + std::to_string(a.q_lora_rank) + ", kv rank " + std::to_string(a.kv_lora_rank) +
                        ", heads of " + std::to_string(a.qk_nope) + "+" + std::to_string(p.rope_dims()) + " / " +
                        std::to_string(a.v_head) + ")");
    }
    if (p.n_dense_lead > 0) {
        parts.push_back(std::to_string(p.n_dense_lead) + (p.n_dense_lead == 1 ? " leading dense layer" : " leading dense layers"));
    }
    if (w.wqkv != nullptr) parts.push_back("fused qkv");
    if (w.bq != nullptr || w.bqkv != nullptr) parts.push_back("qkv bias");
    if (w.q_norm != nullptr) parts.push_back("q/k norms");
    if (w.wq != nullptr && w.wq->ne[1] == 2 * p.n_embd_q()) parts.push_back("sigmoid-gated attention output");
    if (p.q_scale > 0.0f) parts.push_back("q x" + number_text(p.q_scale));
    if (p.kq_scale > 0.0f) parts.push_back("scores x" + number_text(p.kq_scale));
    if (p.residual_scale > 0.0f) parts.push_back("residual branches x" + number_text(p.residual_scale));
    if (p.attn_softcap > 0.0f) parts.push_back("scores soft-capped at " + number_text(p.attn_softcap));
    if (w.sinks != nullptr) parts.push_back("attention sinks");
    if (w.bo != nullptr) parts.push_back("output projection bias");
    if (w.attn_post_norm != nullptr) parts.push_back("post-attention and post-FFN norms");
    if (w.w_up != nullptr && w.w_gate == nullptr) parts.push_back("fused gate/up");
    if (p.layer_n_ff.empty()) parts.push_back(std::string(glu_text(arch.ffn_glu)) + " FFN");  // else layers_text's
    if (p.final_softcap > 0.0f) parts.push_back("logits soft-capped at " + number_text(p.final_softcap));
    if (output_bias) parts.push_back("output bias");
    if (p.logit_scale > 0.0f) parts.push_back("logits / " + number_text(p.logit_scale));
    return join_names(parts, parts.size());
}

std::string layers_text(const DecoderParams& p) {
    if (p.recurrent.empty()) return "";
    std::string conv, attention, ffn;
    int n_conv = 0, n_attention = 0, n_ffn = 0;
    for (int il = 0; il < p.n_layers; ++il) {
        const bool recurrent = p.layer_is_recurrent(il), ffn_only = p.layer_is_ffn_only(il);
        int& count = ffn_only ? n_ffn : recurrent ? n_conv : n_attention;
        std::string& list = ffn_only ? ffn : recurrent ? conv : attention;
        if (count < 3) list += (count > 0 ? ", " : "") + std::to_string(il);
        ++count;
    }
    auto group = [](int count, const std::string& list) { return "(layers " + list + (count > 3 ? ", ...)" : ")"); };
    const SsmParams& s = p.ssm;
    const std::string kernel = "convolution of " + std::to_string(p.conv_kernel);
    std::string recurrent = " short convolutions of " + std::to_string(p.conv_kernel) + " inputs ";
    if (s.enabled() && s.kind == SsmKind::Mamba2) {
        recurrent = " Mamba-2 (" + std::to_string(s.n_head) + " heads of " + std::to_string(s.head_dim()) + " in " + std::to_string(s.n_group) +
                    (s.n_group == 1 ? " group" : " groups") + ", state " + std::to_string(s.d_state) + ", " + kernel + ") ";
    } else if (s.enabled()) {
        recurrent = " gated delta net (" + std::to_string(s.n_head) + " value heads" + (s.grouped_heads ? " grouped by " : ", ") +
                    std::to_string(s.n_group) + " key heads, of " +
                    std::to_string(s.d_state) + ", " + kernel + ") ";
    }
    std::string text = std::to_string(n_conv) + recurrent + group(n_conv, conv) + ", " + std::to_string(n_attention) + " attention " +
                       group(n_attention, attention);
    if (n_ffn > 0 && p.has_experts()) {
        text += ", " + std::to_string(n_ffn) + " experts " + group(n_ffn, ffn);
    } else if (n_ffn > 0) {
        text += ", " + std::to_string(n_ffn) + " relu² FFN of " + std::to_string(p.n_ff) + " " + group(n_ffn, ffn);
    }
    return text;
}

std::string window_text(const DecoderParams& p) {
    const SlidingWindow& swa = p.swa;
    if (swa.window <= 0) return "";
    std::string layers;
    int shown = 0;
    for (int il = 0; il < p.n_layers && shown < 3; ++il) {
        if (swa.slides(il)) layers += (shown++ ? ", " : "") + std::to_string(il);
    }
    int sliding = 0;
    for (int il = 0; il < p.n_layers; ++il) sliding += swa.slides(il) ? 1 : 0;
    const std::string share = !swa.layers.empty() ? std::to_string(sliding) + " of " + std::to_string(p.n_layers) + " layers, by the file's list"
                              : swa.pattern == 0  ? "every layer"
                                                  : std::to_string(swa.pattern - 1) + " in " + std::to_string(swa.pattern);
    return std::to_string(swa.window) + " positions on layers " + layers + ", ... (" + share + " slide), their rope base " +
           number_text(swa.rope_freq_base) + " scale " + number_text(swa.rope_freq_scale);
}

std::string experts_text(const DecoderParams& p) {
    const ExpertParams& e = p.experts;
    if (!p.has_experts()) return "";
    const char* gating = e.gating == ExpertGating::Softmax ? "softmax then top-k"
                         : e.gating == ExpertGating::Sigmoid ? "sigmoid then top-k"
                                                             : "top-k then softmax";
    std::string out = std::to_string(e.n_expert) + ", " + std::to_string(e.n_used) + " per token, feed-forward " + std::to_string(e.n_ff) +
                      " each, " + gating;
    if (e.selection_bias) out += " (chosen with a bias)";
    if (e.n_group > 1) out += " within the best " + std::to_string(e.n_group_used) + " of " + std::to_string(e.n_group) + " groups";
    if (e.n_shared > 0) out += ", " + std::to_string(e.n_shared) + " shared";
    if (e.n_ff_shared > 0) out += " of feed-forward " + std::to_string(e.n_ff_shared);
    if (e.shared_gate) out += " gated by a sigmoid";
    if (e.normalize) out += ", normalised";
    if (e.weights_scale != 1.0f) out += ", weights x" + number_text(e.weights_scale);
    if (e.biases) out += ", biases";
    return out;
}

}  // namespace xb
