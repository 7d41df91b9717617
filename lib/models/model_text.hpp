// A model's layers in words, for --info (apps/common/model_info.cpp).
#pragma once

#include <string>

#include "models/architectures.hpp"
#include "models/decoder.hpp"

namespace xb {

// What the architecture's layers do, from its hyperparameters and the weights a layer holds:
// "q/k norms, post-attention and post-FFN norms, geglu FFN" ("swiglu FFN" alone for llama's).
std::string variant_text(const Architecture& arch, const DecoderParams& p, const LayerWeights& layer, bool output_bias);
// The sliding window ("4 positions on layers 0, 1, 2, ... (5 in 6 slide), their rope base 10000
// scale 1"), "" without one.
std::string window_text(const DecoderParams& p);
// A hybrid's layers ("10 short convolutions of 3 inputs (layers 0, 1, 3, ...), 6 attention
// (layers 2, 5, 8, ...)"), "" when every layer attends.
std::string layers_text(const DecoderParams& p);
// The experts ("8, 2 per token, feed-forward 32 each, softmax then top-k, normalised"), "" for a
// dense model.
std::string experts_text(const DecoderParams& p);

}  // namespace xb
