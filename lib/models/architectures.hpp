// The llama.cpp architectures xbackend builds graphs for (general.architecture), one entry each:
// what the architecture fixes of the decoder's variant, what its file's metadata and tensors may
// add, and the graph builder of its family (models/<family>.cpp). The GGUF model
// (models/gguf_model.hpp) reads the hyperparameters every architecture shares, then its entry's.
#pragma once

#include <string>
#include <string_view>

#include "core/context.hpp"
#include "core/status.hpp"
#include "formats/gguf.hpp"
#include "models/llama_decoder.hpp"

namespace xb {

struct Architecture {
    std::string_view name;   // general.architecture, also the prefix of its metadata keys
    std::string_view family; // the builder's file: "llama"
    RopeMode rope_mode = RopeMode::Normal;
    bool qkv_bias = false;   // q, k and v projections always add a bias (else when the file has them)
    // Builds the graph of `params` with the file's weight types.
    Result<LlamaDecoder> (*build)(Context& ctx, const LlamaParams& params, const LlamaWeightTypes& types) = nullptr;
};

// The entry of `name`, or nullptr when it is not supported.
const Architecture* find_architecture(std::string_view name);
// The supported names, for messages: "llama, qwen2".
std::string supported_architectures();

}  // namespace xb
