// The llama family's decoder (llama, qwen2: models/architectures.hpp), built from the shared
// pieces of models/decoder_blocks.hpp: token embedding, n_layers of (rms_norm, rope'd
// grouped-query attention, swiglu feed-forward) with residuals, final norm and output projection.
// Used by the benchmarks, the config's `llama_decoder` builder (synthetic weights) and its `gguf`
// builder (llama.cpp's files).
//
// Weights carry llama.cpp's tensor names (`token_embd.weight`, `blk.0.attn_q.weight`, ...) and
// nodes the names llama.cpp's graph gives them (`attn_norm-0`, `Qcur-0`, `kq-0`, `ffn_out-0`,
// `result_output`, ...; decoder_blocks.hpp), so a per-node report reads like llama.cpp's eval
// callback.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/context.hpp"
#include "core/status.hpp"
#include "core/tensor.hpp"

namespace xb {

struct LlamaParams {
    int n_layers = 4;
    int n_embd = 1024;
    int n_head = 16;
    int n_head_kv = 16;      // < n_head for grouped-query attention
    int n_embd_head = 0;     // head size (llama.cpp's attention.key_length); 0: n_embd / n_head
    int n_ff = 2816;
    int n_tokens = 32;
    int n_kv = 0;            // KV cache positions (the batch is the last n_tokens); 0: no cache
    int n_vocab = 32000;
    float rms_eps = 1e-5f;
    float rope_freq_base = 10000.0f;
    float rope_freq_scale = 1.0f;
    RopeMode rope_mode = RopeMode::Neox;
    int rope_n_dims = 0;     // rotated dims of each head; 0: the whole head
    bool rope_freq_factors = false;  // rope angles divided per pair by rope_freqs.weight (Llama 3.1+)
    DType weight_type = DType::F32;
    bool qkv_bias = false;     // q, k and v projections add a bias (qwen2)
    bool tied_output = false;  // the output projection is the token embedding (no output.weight)
    bool flash_attn = true;    // flash_attn_ext, or mul_mat + soft_max_ext + mul_mat

    int head_dim() const { return n_embd_head > 0 ? n_embd_head : n_embd / n_head; }
    int rope_dims() const { return rope_n_dims > 0 ? rope_n_dims : head_dim(); }
    int64_t n_embd_q() const { return static_cast<int64_t>(n_head) * head_dim(); }
    int64_t n_embd_kv() const { return static_cast<int64_t>(n_head_kv) * head_dim(); }
    // Positions attended to: the cache, or the batch itself without one.
    int n_attended() const { return n_kv > 0 ? n_kv : n_tokens; }
    // Multiply-adds x2 of the matrix products, for throughput figures.
    double matmul_flops() const;
};

// The type of each weight, by its llama.cpp name; `fallback` is the builder's choice (weight_type
// for the matrices, f32 for norms and biases). Empty: the fallback everywhere.
using LlamaWeightTypes = std::function<DType(const std::string& name, DType fallback)>;

struct LlamaLayerWeights {
    Tensor* attn_norm;
    Tensor* wq;
    Tensor* wk;
    Tensor* wv;
    Tensor* bq;  // biases: nullptr unless params.qkv_bias
    Tensor* bk;
    Tensor* bv;
    Tensor* wo;
    Tensor* ffn_norm;
    Tensor* w_gate;
    Tensor* w_up;
    Tensor* w_down;

    std::vector<Tensor*> all() const;  // the weights that exist, in the order above
};

struct LlamaDecoder {
    Tensor* tokens;      // i32 [n_tokens] (input)
    Tensor* positions;   // i32 [n_tokens] (input): n_attended - n_tokens ... n_attended - 1
    Tensor* kq_mask;     // f16 [n_attended, n_tokens] causal mask (input)
    Tensor* tok_embd;    // [n_embd, n_vocab]
    std::vector<LlamaLayerWeights> layers;
    std::vector<Tensor*> k_cache;  // per layer [n_embd_kv, n_kv] f32 (persistent, like weights)
    std::vector<Tensor*> v_cache;
    Tensor* out_norm;
    Tensor* output;      // [n_embd, n_vocab]; tok_embd itself when params.tied_output
    Tensor* rope_freqs;  // f32 [rope dims / 2] when params.rope_freq_factors, else nullptr
    Tensor* logits;      // f32 [n_vocab, n_tokens] (output), named result_output
    // What to build the graph from, in order: the cache writes of each layer, then the logits, so
    // that every layer's attention runs after its cache is written.
    std::vector<Tensor*> graph_outputs;

    // Weights and caches: the tensors that live in a weights buffer, outside the compute graph's
    // (each once: a tied output is the embedding).
    std::vector<Tensor*> weights() const;
    std::vector<Tensor*> inputs() const { return {tokens, positions, kq_mask}; }
};

// Builds the decoder's tensors and graph in ctx (metadata only: allocate and fill separately).
Result<LlamaDecoder> build_llama_decoder(Context& ctx, const LlamaParams& params, const LlamaWeightTypes& types = {});

// Causal mask values for kq_mask: 0 where key j <= query i's position, -inf elsewhere
// ([n_kv, n_tokens] row-major; the queries are the last n_tokens positions).
std::vector<float> causal_mask_values(int n_kv, int n_tokens);
// Positions of the batch's tokens: n_attended - n_tokens, ..., n_attended - 1.
std::vector<int32_t> batch_positions(const LlamaParams& params);

}  // namespace xb
