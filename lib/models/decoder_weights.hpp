// The decoder's weights with llama.cpp's names and shapes, per the params' variant: the tensors
// a model file of that variant holds (models/gguf_model.cpp checks a file against them).
#pragma once

#include <initializer_list>
#include <string>
#include <utility>

#include "core/context.hpp"
#include "models/decoder.hpp"

namespace xb::decoder {

// Makes each weight with the caller's type for its name, or the builder's fallback (weight_type
// for matrices, f32 for norms and biases).
class WeightMaker {
public:
    WeightMaker(Context& ctx, const DecoderParams& p, WeightTypes types) : ctx_(ctx), p_(p), types_(std::move(types)) {}

    Tensor* matrix(const std::string& name, int64_t cols, int64_t rows) { return make(name, p_.weight_type, {cols, rows}); }
    Tensor* vector(const std::string& name, int64_t n) { return make(name, DType::F32, {n}); }
    LayerWeights layer(int il);

private:
    Tensor* make(const std::string& name, DType fallback, std::initializer_list<int64_t> ne);
    void attention(const std::string& pre, LayerWeights& w);
    void latent_attention(const std::string& pre, LayerWeights& w);
    void dense_ffn(const std::string& pre, LayerWeights& w);
    void experts(const std::string& pre, LayerWeights& w);

    Context& ctx_;
    const DecoderParams& p_;
    WeightTypes types_;  // a copy: callers pass temporaries (gguf_weight_types(file))
};

}  // namespace xb::decoder
