// The llama.cpp architectures xbackend builds graphs for (general.architecture), one entry each:
// which variant of the decoder (models/decoder.hpp) the architecture is, and how its own metadata
// keys set that variant. The GGUF model (models/gguf_model.hpp) reads the hyperparameters every
// architecture shares, then its entry's.
//
//   llama      Llama 1/2/3, Mistral, Mixtral (experts), SmolLM: normal-mode rope
//   qwen2      Qwen2/2.5: q/k/v biases, neox rope
//   qwen3      Qwen3: per-head Q/K norms
//   qwen3moe   Qwen3-MoE: Qwen3 with experts
//   gemma2     Gemma 2: scaled embeddings, post-norms, GeGLU, soft-capped scores and logits,
//              sliding window on every other layer
//   gemma3     Gemma 3: Q/K norms, post-norms, GeGLU, 5 sliding layers in 6
//   phi3       Phi-3/3.5/4-mini: fused QKV and gate/up, long/short rope factors
//   gpt-oss    gpt-oss: experts with biases and clamped SwiGLU, attention sinks, sliding window
//   deepseek2  DeepSeek V2/V3/R1, Kimi K2: latent attention, leading dense layers, shared experts,
//              sigmoid routing with a selection bias within expert groups, YaRN
#pragma once

#include <string>
#include <string_view>

#include "core/status.hpp"
#include "models/decoder.hpp"
#include "models/gguf_metadata.hpp"

namespace xb {

struct Architecture {
    std::string_view name;  // general.architecture, also the prefix of its metadata keys
    RopeMode rope_mode = RopeMode::Neox;
    // Sets the architecture's variant in `p` (which holds the shared hyperparameters) from its
    // own keys: the prefix "<name>." is `a`.
    Status (*read_variant)(const GgufMetadata& md, const std::string& a, DecoderParams& p) = nullptr;
};

// The entry of `name`, or nullptr when it is not supported.
const Architecture* find_architecture(std::string_view name);
// The supported names, for messages: "llama, qwen2, ...".
std::string supported_architectures();

}  // namespace xb
