// The model's weights with llama.cpp's names and shapes. Each architecture names its layer's
// tensors (models/arch_<name>.cpp) through a LayerWeightMaker, from the pieces most of them share
// (the attention's projections, the feed-forward network, the experts); a model file's tensors are
// then checked against what it made (models/gguf_model.cpp).
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <utility>

#include "core/context.hpp"
#include "models/decoder.hpp"

namespace xb::decoder {

// Where the weights come from: each one's type, and which optional tensors exist (llama.cpp's
// TENSOR_NOT_REQUIRED: biases some files carry, Phi-3's fused QKV). Empty functions: the builder's
// types (weight_type for matrices, f32 for norms and biases) and no optional tensor, the
// synthetic weights of the llama_decoder config and the benchmarks.
struct WeightSource {
    WeightTypes types;
    std::function<bool(const std::string& name)> has;
    // Checks each weight as it is made against the source (a model file's tensor: present, of a
    // type and shape its role allows), so that a wrong tensor is named as such, before an op that
    // uses it refuses it in op words. Empty: nothing to check.
    std::function<Status(const Tensor& weight)> check;
};

// Makes each weight with the source's type for its name, or the builder's fallback.
class WeightMaker {
public:
    WeightMaker(Context& ctx, const DecoderParams& p, WeightSource source) : ctx_(ctx), p_(p), source_(std::move(source)) {}

    Tensor* matrix(const std::string& name, int64_t cols, int64_t rows) { return make(name, p_.weight_type, {cols, rows}); }
    Tensor* vector(const std::string& name, int64_t n) { return make(name, DType::F32, {n}); }
    Tensor* make(const std::string& name, DType fallback, std::initializer_list<int64_t> ne);
    // Whether the source holds `name` (never, for synthetic weights).
    bool has(const std::string& name) const { return source_.has && source_.has(name); }
    const DecoderParams& params() const { return p_; }

private:
    Context& ctx_;
    const DecoderParams& p_;
    WeightSource source_;  // a copy: callers pass temporaries (gguf_weight_source(file))
};

enum class Need { Required, Optional, None };

// Layer il's weights: names are the suffixes after "blk.<il>.".
class LayerWeightMaker {
public:
    LayerWeightMaker(WeightMaker& make, int il) : make_(make), p_(make.params()), il_(il), pre_("blk." + std::to_string(il) + ".") {}

    int layer() const { return il_; }
    const DecoderParams& params() const { return p_; }
    // Whether the source holds the layer's tensor `suffix` (never, for synthetic weights).
    bool has(const std::string& suffix) const { return make_.has(pre_ + suffix); }
    Tensor* matrix(const std::string& suffix, int64_t cols, int64_t rows) { return make_.matrix(pre_ + suffix, cols, rows); }
    Tensor* vector(const std::string& suffix, int64_t n) { return make_.vector(pre_ + suffix, n); }
    // nullptr unless the source holds it (`need` Optional), always (Required), never (None).
    Tensor* vector(const std::string& suffix, int64_t n, Need need);
    // Any shape, with the builder's type `fallback` where the source says none.
    Tensor* tensor(const std::string& suffix, DType fallback, std::initializer_list<int64_t> ne) { return make_.make(pre_ + suffix, fallback, ne); }

    // attn_norm, then Q, K and V: one attn_qkv matrix where the source holds it and `fused` allows
    // it, else attn_q, attn_k and attn_v; their biases as `biases` says.
    void qkv(LayerWeights& w, Need biases, bool fused = false);
    void qk_norms(LayerWeights& w);          // attn_q_norm, attn_k_norm: [head size]
    void attn_output(LayerWeights& w, Need bias);
    // The feed-forward network after its norm (named `norm`): the experts on the layers that have
    // them (DecoderParams::layer_has_experts), else the dense gate/up/down, whose gate and up are
    // one ffn_up matrix of the gate's rows then the up's when `fused_gate_up`.
    void ffn(LayerWeights& w, const std::string& norm, bool fused_gate_up = false);
    // Norms of the attention's and the FFN's outputs before their residual adds (Gemma):
    // post_attention_norm, post_ffw_norm.
    void post_norms(LayerWeights& w);
    // Mamba-2's mixer (DecoderParams::ssm): ssm_in, ssm_conv1d (its bias optional), ssm_dt.bias,
    // ssm_a and ssm_d, the grouped ssm_norm, ssm_out (Granite 4.0-H, Nemotron-H).
    void mamba2(LayerWeights& w);
    // Latent attention (DeepSeek): attn_norm, then MlaParams' weights.
    void latent_attention(LayerWeights& w);

    // The experts alone, without a norm: the router, the experts (no gate where
    // ExpertParams::ungated), the selection bias and the shared experts the params say.
    void experts(LayerWeights& w);

private:
    void dense_ffn(LayerWeights& w, bool fused_gate_up);

    WeightMaker& make_;
    const DecoderParams& p_;
    int il_;
    std::string pre_;
};

}  // namespace xb::decoder
