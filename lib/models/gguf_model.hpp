// llama.cpp model files (GGUF) as decoder graphs: the hyperparameters of the `llama` and `qwen2`
// architectures read from the file's metadata, and the file's tensors checked against the roles
// the decoder gives them (name, shape, type) before any weight is read.
//
//   llama: Llama 1/2/3, Mistral, TinyLlama, SmolLM: normal-mode rope (llama.cpp's converter
//          permutes Q and K for it), optional q/k/v biases, output tied to the embedding when
//          output.weight is absent.
//   qwen2: Qwen2/2.5: q/k/v biases, neox rope.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "formats/gguf.hpp"
#include "models/llama_decoder.hpp"
#include "core/status.hpp"

namespace xb {

// What a config says about its model file ("graph": {"model": "gguf", "file": ..., "params": ...}).
struct GgufModelParams {
    std::string file;             // resolved against the config's directory
    int n_tokens = 8;             // tokens per compute
    int n_kv = 0;                 // KV cache positions, the batch last; 0: the batch alone (n_tokens)
    int n_layers = 0;             // only the first N layers (a quick check); 0: all of them
    bool flash_attn = true;
    std::vector<int32_t> tokens;  // the batch's token ids; empty: seeded pseudo-random valid ids
};

// The file's model as the decoder sees it.
struct GgufModelInfo {
    std::string architecture;  // general.architecture
    std::string name;          // general.name, when present
    int64_t context_length = 0;
    LlamaParams params;        // every layer; n_tokens and n_kv left at their defaults
    std::string rope_scaling = "none";
};

// The supported architectures, for messages: "llama, qwen2".
const char* gguf_supported_architectures();

// Reads and checks the hyperparameters. Errors name the file, the key and its byte offset.
Result<GgufModelInfo> read_gguf_model_info(const GgufReader& file);

// Every tensor the decoder `m` (built from `info`'s params) uses must be in the file with the
// decoder's shape and a type that fits its role, and every tensor of the file must have a role:
// a file of a variant this graph does not compute is an error, never a wrong answer.
Status check_gguf_tensors(const GgufReader& file, const GgufModelInfo& info, const LlamaDecoder& m);

// The weight types of the file's tensors, for build_llama_decoder (the fallback for names the
// file lacks, which check_gguf_tensors then reports).
LlamaWeightTypes gguf_weight_types(const GgufReader& file);

}  // namespace xb
