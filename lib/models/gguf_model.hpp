// llama.cpp model files (GGUF) as decoder graphs: the hyperparameters read from the file's
// metadata, the graph of its architecture (models/architectures.hpp: the supported ones and what
// each is), and the file's tensors checked against the roles the graph gives them (name, shape,
// type) before any weight is read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/context.hpp"
#include "core/status.hpp"
#include "formats/gguf.hpp"
#include "models/architectures.hpp"
#include "models/decoder.hpp"
#include "models/decoder_weights.hpp"

namespace xb {

// The most tokens one batch may have (a config's n_tokens or tokens, --tokens).
inline constexpr int kMaxBatchTokens = 1 << 16;

// What a config says about its model file ("graph": {"model": "gguf", "file": ..., "params": ...}).
struct GgufModelParams {
    std::string file;             // resolved against the config's directory
    int n_tokens = 8;             // tokens per compute
    int n_kv = 0;                 // KV cache positions, the batch last; 0: the batch alone (n_tokens)
    int n_layers = 0;             // only the first N layers (a quick check); 0: all of them
    bool flash_attn = true;
    int kv_cells = 0;             // cache cells, past n_kv empty and masked (llama.cpp pads to 256); 0: n_kv
    std::vector<int32_t> tokens;  // the batch's token ids; empty: seeded pseudo-random valid ids
};

// The file's model as the decoder sees it.
struct GgufModelInfo {
    std::string architecture;  // general.architecture
    const Architecture* arch = nullptr;  // its entry
    std::string name;          // general.name, when present
    int64_t context_length = 0;
    DecoderParams params;        // every layer; n_tokens and n_kv left at their defaults
    std::string rope_scaling = "none";
};

// Reads and checks the hyperparameters. Errors name the file, the key and its byte offset.
Result<GgufModelInfo> read_gguf_model_info(const GgufReader& file);

// What the file's layers do, for --info, from the tensors the first attention layer has.
struct GgufLayersSummary {
    bool qkv_bias = false;  // the Q, K and V projections add biases
    std::string variant;    // in words (models/model_text.hpp)
};
GgufLayersSummary summarize_layers(const GgufReader& file, const GgufModelInfo& info);

// Every tensor the decoder `m` (built from `info`'s params) uses must be in the file with the
// decoder's shape and a type that fits its role, and every tensor of the file must have a role:
// a file of a variant this graph does not compute is an error, never a wrong answer.
Status check_gguf_tensors(const GgufReader& file, const GgufModelInfo& info, const Decoder& m);
// One weight of the model against the file's tensor of its name: present, a type its role allows
// (vectors f32, matrices float or quantized), the shape the hyperparameters give.
Status check_gguf_weight(const GgufReader& file, const GgufModelInfo& info, const Tensor& w);

// The file as the builders' weight source: its tensors' types (the fallback for names the file
// lacks, which check_gguf_tensors then reports) and which optional tensors it holds.
decoder::WeightSource gguf_weight_source(const GgufReader& file);

// The graph of the file's architecture with `params` (info.params with the caller's tokens, cache
// and layers), its tensors checked against the file's (check_gguf_tensors).
Result<Decoder> build_gguf_graph(Context& ctx, const GgufReader& file, const GgufModelInfo& info, const DecoderParams& params);

}  // namespace xb
