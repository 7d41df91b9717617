// The decoder-only transformer every supported architecture builds (models/architectures.hpp:
// one file per architecture builds its layers): token embedding, n_layers of layers with residuals,
// final norm and output projection. DecoderParams holds the hyperparameters (the shared ones and
// those some architectures read: windows, soft-caps, experts, latent attention), LayerWeights the
// tensors any layer may have, Decoder the built graph's tensors. Used by the benchmarks, the
// config's `llama_decoder` builder (synthetic weights, llama's layers) and its `gguf` builder
// (llama.cpp's files).
//
// Weights carry llama.cpp's tensor names (`token_embd.weight`, `blk.0.attn_q.weight`, ...) and
// nodes the names llama.cpp's graph gives them (`attn_norm-0`, `Qcur-0`, `kq-0`, `ffn_out-0`,
// `result_output`, ...; decoder_blocks.hpp), so a per-node report reads like llama.cpp's eval
// callback.
#pragma once

#include <algorithm>

#include <functional>
#include <string>
#include <vector>

#include "core/context.hpp"
#include "core/status.hpp"
#include "core/tensor.hpp"

namespace xb {

// Sliding-window attention (Gemma 2/3, gpt-oss): some layers attend only to the last `window`
// positions and rope with their own base and scale.
struct SlidingWindow {
    int window = 0;   // positions; 0: every layer attends to the whole cache
    int pattern = 0;  // layer il slides when il % pattern < pattern - 1 (0: every layer), llama.cpp's rule
    // Which layers slide, one flag per layer (a file's per-layer sliding_window_pattern array);
    // empty: `pattern` decides.
    std::vector<bool> layers{};
    float rope_freq_base = 10000.0f;
    float rope_freq_scale = 1.0f;

    bool slides(int il) const {
        if (window <= 0) return false;
        if (!layers.empty()) return il >= 0 && static_cast<size_t>(il) < layers.size() && layers[static_cast<size_t>(il)];
        return pattern == 0 || il % pattern < pattern - 1;
    }
};

// How a token's experts and their weights come from the router's logits.
enum class ExpertGating {
    Softmax,          // softmax over all experts, then the top n_used (Mixtral, Qwen3-MoE)
    SoftmaxOfChosen,  // the top n_used logits, then softmax over those (gpt-oss)
    Sigmoid,          // a sigmoid per expert, then the top n_used (DeepSeek V3)
};

// A mixture-of-experts feed-forward network in place of the dense one.
struct ExpertParams {
    int n_expert = 0;  // 0: a dense feed-forward network
    int n_used = 0;    // experts per token
    int n_ff = 0;      // each expert's hidden size
    ExpertGating gating = ExpertGating::Softmax;
    bool normalize = false;      // the chosen weights divided by their sum
    float weights_scale = 1.0f;  // the chosen weights multiplied by it
    bool biases = false;         // the router and the experts' products add biases (gpt-oss)
    // DeepSeek V3: exp_probs_b added to the probabilities to choose the experts (not to weight
    // them), and the choice made within the n_group_used best of n_group groups of experts, a
    // group scored by its two best; 0 groups: no grouping.
    bool selection_bias = false;
    int n_group = 0;
    int n_group_used = 0;
    int n_shared = 0;  // shared experts every token goes through (ffn_*_shexp)
    int n_ff_shared = 0;  // their hidden size together (Granite's expert_shared_feed_forward_length); 0: n_shared x n_ff
    bool shared_gate = false;  // the shared expert's output times sigmoid(x . ffn_gate_inp_shexp) (Qwen3.5-MoE, Qwen3-Next)
    // The experts and the shared expert without a gate: down(relu(up x)²) (Nemotron-H MoE).
    bool ungated = false;

    int shared_ff() const { return n_ff_shared > 0 ? n_ff_shared : n_shared * n_ff; }
};

// Multi-head latent attention (DeepSeek V2/V3, Kimi K2) in llama.cpp's absorbed form: queries
// through a low-rank pair (attn_q_a, its norm, attn_q_b), one compressed latent per token
// (attn_kv_a_mqa: the latent and the key's rope part, which is all the cache holds); each head's
// query meets the latent through attn_k_b, and its value comes out of the latent through attn_v_b.
struct MlaParams {
    int q_lora_rank = 0;   // 0: one attn_q matrix (the Lite models)
    int kv_lora_rank = 0;  // the latent's size; 0: not latent attention
    int qk_nope = 0;       // each head's query/key dims besides the rope ones (key_length_mla - rope dims)
    int v_head = 0;        // each head's value dims (value_length_mla)
    // DeepSeek's YaRN magnitude (mscale_all_dim, from rope.scaling.yarn_log_multiplier): the
    // scores are scaled by mscale^2 / sqrt(qk_nope + rope dims).
    float yarn_log_mul = 0.0f;

    bool enabled() const { return kv_lora_rank > 0; }
};

// The recurrent layers' mixer where it is a state space, llama.cpp's ssm.* keys:
// - Mamba-2 (Granite 4.0-H, Nemotron-H): ssm_in projects each token to z (the gate), x, B, C and
//   dt; x, B and C go through a causal convolution of conv_kernel inputs and silu; the scan carries
//   a state [d_state, head_dim, n_head] per layer between tokens.
// - The gated delta net (Qwen3.5, Qwen3-Next): q and k (n_group key heads of d_state) and v
//   (n_head value heads of head_dim = d_state) through the convolution; the delta rule carries a
//   state [d_state, d_state, n_head].
enum class SsmKind { Mamba2, GatedDeltaNet };

struct SsmParams {
    int d_inner = 0;  // ssm.inner_size; 0: no state-space layers
    int d_state = 0;  // ssm.state_size
    int n_head = 0;   // ssm.time_step_rank: the heads, each with its own step and decay
    int n_group = 0;  // ssm.group_count: B and C (the delta net's q and k) shared by n_head / n_group heads each
    SsmKind kind = SsmKind::Mamba2;
    // The delta net's value head h reads key head h / (n_head / n_group) (Qwen3-Next: HF's grouped
    // order) instead of h % n_group (ggml's tiled order, into which Qwen3.5's converter reorders).
    bool grouped_heads = false;

    bool enabled() const { return d_inner > 0; }
    int head_dim() const { return n_head > 0 ? d_inner / n_head : 0; }
    // The convolved channels: x, B and C.
    int64_t conv_channels() const { return d_inner + 2 * static_cast<int64_t>(n_group) * d_state; }
    // ssm_in's rows: z, x, B, C and dt.
    int64_t in_rows() const { return 2 * static_cast<int64_t>(d_inner) + 2 * static_cast<int64_t>(n_group) * d_state + n_head; }
};

struct DecoderParams {
    int n_layers = 4;
    int n_embd = 1024;
    int n_head = 16;
    int n_head_kv = 16;      // < n_head for grouped-query attention
    int n_embd_head = 0;     // head size (llama.cpp's attention.key_length); 0: n_embd / n_head
    int n_ff = 2816;
    int n_tokens = 32;
    int n_kv = 0;            // KV cache positions (the batch is the last n_tokens); 0: no cache
    // Logits for the batch's last n_outputs positions only, the rows chosen after the last layer's
    // attention as llama.cpp's inp_out_ids does (its FFN, final norm and output projection run on
    // those rows alone); 0: every position.
    int n_outputs = 0;
    int n_vocab = 32000;
    float rms_eps = 1e-5f;
    float rope_freq_base = 10000.0f;
    float rope_freq_scale = 1.0f;
    RopeMode rope_mode = RopeMode::Neox;
    int rope_n_dims = 0;     // rotated dims of each head; 0: the whole head
    // YaRN (rope.scaling.type yarn): ext_factor 1 and the training context; attn_factor scales
    // cos and sin (longrope's rope.scaling.attn_factor too).
    float rope_ext_factor = 0.0f;
    float rope_attn_factor = 1.0f;
    int rope_n_ctx_orig = 0;
    float rope_beta_fast = 32.0f;
    float rope_beta_slow = 1.0f;
    // Rope angles divided per pair by this tensor ([rope dims / 2]): "rope_freqs.weight" (Llama
    // 3.1+), "rope_factors_long.weight" or "rope_factors_short.weight" (Phi-3); "": none.
    std::string rope_factors;
    DType weight_type = DType::F32;
    bool tied_output = false;  // the output projection is the token embedding (no output.weight)
    bool flash_attn = true;    // flash_attn_ext, or mul_mat + soft_max_ext + mul_mat

    // Hyperparameters some architectures set (models/arch_<name>.cpp).
    float embd_scale = 0.0f;  // the embeddings multiplied by it (Gemma: sqrt(n_embd)); 0: not scaled
    // Q multiplied by it before attention, which then scales by 1 (Gemma, Phi-3, as llama.cpp
    // does); 0: attention scales the scores by 1/sqrt(head size).
    float q_scale = 0.0f;
    float attn_softcap = 0.0f;   // scores -> c * tanh(scores / c) (Gemma 2); 0: none
    float final_softcap = 0.0f;  // logits -> c * tanh(logits / c) (Gemma 2/3); 0: none
    // Granite's multipliers: the scores scaled by kq_scale instead of 1/sqrt(head size)
    // (attention.scale), each layer's attention (or mixer) and FFN outputs by residual_scale before
    // their residual adds, and the logits divided by logit_scale; 0: none.
    float kq_scale = 0.0f;
    float residual_scale = 0.0f;
    float logit_scale = 0.0f;
    bool rope = true;  // false: the attention layers rope nothing (Granite 4.0-H: rope.scaling.finetuned false)
    SlidingWindow swa;
    ExpertParams experts;
    int n_dense_lead = 0;  // the first layers keep a dense FFN of n_ff (DeepSeek)
    MlaParams mla;
    // Hybrid models: the layers that keep a recurrent state instead of a KV cache (a file's
    // per-layer head_count_kv of 0), one flag per layer; empty: every layer attends.
    std::vector<bool> recurrent;
    // Nemotron-H: each layer's feed_forward_length, one per layer; a layer with one above 0 is that
    // feed-forward network alone (relu², no gate), the others a mixer (attention or recurrent)
    // alone; empty: every layer has both, its FFN n_ff wide.
    std::vector<int> layer_n_ff;
    // The recurrent layers' causal convolution: its width (LFM2's shortconv.l_cache, Mamba's
    // ssm.conv_kernel); its state keeps the last conv_kernel - 1 inputs.
    int conv_kernel = 0;
    SsmParams ssm;

    int head_dim() const { return n_embd_head > 0 ? n_embd_head : n_embd / n_head; }
    int rope_dims() const { return rope_n_dims > 0 ? rope_n_dims : head_dim(); }
    int64_t n_embd_q() const { return static_cast<int64_t>(n_head) * head_dim(); }
    int64_t n_embd_kv() const { return static_cast<int64_t>(n_head_kv) * head_dim(); }
    // Positions attended to: the cache, or the batch itself without one.
    int n_attended() const { return n_kv > 0 ? n_kv : n_tokens; }
    // Cache cells, at least n_kv: cells past the n_kv positions are empty and masked, as in
    // llama.cpp's cache, which pads its cells to 256 (the attention then sums over the same row
    // length as llama.cpp's; kv_cells 0: n_kv).
    int kv_cells = 0;
    int n_cells() const { return std::max(kv_cells, n_attended()); }
    // Positions whose logits are computed.
    int n_logits() const { return n_outputs > 0 ? n_outputs : n_tokens; }
    bool has_experts() const { return experts.n_expert > 0; }
    bool layer_is_recurrent(int il) const {
        return il >= 0 && static_cast<size_t>(il) < recurrent.size() && recurrent[static_cast<size_t>(il)];
    }
    bool layer_has_experts(int il) const { return has_experts() && il >= n_dense_lead; }
    bool layer_is_ffn_only(int il) const {
        return il >= 0 && static_cast<size_t>(il) < layer_n_ff.size() && layer_n_ff[static_cast<size_t>(il)] > 0;
    }
    // Whether layer il attends (it keeps a KV cache): neither recurrent nor a feed-forward network alone.
    bool layer_attends(int il) const { return !layer_is_recurrent(il) && !layer_is_ffn_only(il); }
    // The channels a recurrent layer convolves: Mamba-2's x, B and C, or LFM2's n_embd.
    int64_t conv_channels() const { return ssm.enabled() ? ssm.conv_channels() : n_embd; }
    // Multiply-adds x2 of the matrix products, for throughput figures (the experts a token uses).
    double matmul_flops() const;
};

// The type of each weight, by its llama.cpp name; `fallback` is the builder's choice (weight_type
// for the matrices, f32 for norms and biases). Empty: the fallback everywhere.
using WeightTypes = std::function<DType(const std::string& name, DType fallback)>;

// One layer's weights; nullptr where its architecture (or the file) has none.
struct LayerWeights {
    Tensor* attn_norm = nullptr;
    Tensor* wqkv = nullptr;  // one fused matrix (Phi-3): [n_embd, n_embd_q + 2 n_embd_kv]
    Tensor* bqkv = nullptr;
    Tensor* wq = nullptr;
    Tensor* wk = nullptr;
    Tensor* wv = nullptr;
    Tensor* bq = nullptr;  // biases (Qwen2, gpt-oss, some llama files)
    Tensor* bk = nullptr;
    Tensor* bv = nullptr;
    Tensor* q_norm = nullptr;  // per-head norms (Qwen3, Gemma 3): [head size]
    Tensor* k_norm = nullptr;
    Tensor* wo = nullptr;
    Tensor* bo = nullptr;
    Tensor* sinks = nullptr;  // a sink logit per head (gpt-oss): [n_head]
    Tensor* attn_post_norm = nullptr;
    Tensor* ffn_norm = nullptr;
    Tensor* w_gate = nullptr;  // dense FFN (absent when up holds the gate's rows too)
    Tensor* w_up = nullptr;    // [n_embd, n_ff], or [n_embd, 2 n_ff]: the gate's rows then the up's (Phi-3)
    Tensor* w_down = nullptr;
    Tensor* b_up = nullptr;    // the dense FFN's biases (Nemotron-H's, optional)
    Tensor* b_down = nullptr;
    Tensor* ffn_post_norm = nullptr;
    Tensor* router = nullptr;  // experts: ffn_gate_inp [n_embd, n_expert]
    Tensor* router_b = nullptr;
    Tensor* gate_exps = nullptr;  // [n_embd, n_ff, n_expert]
    Tensor* up_exps = nullptr;
    Tensor* down_exps = nullptr;  // [n_ff, n_embd, n_expert]
    Tensor* gate_exps_b = nullptr;  // [n_ff, n_expert]
    Tensor* up_exps_b = nullptr;
    Tensor* down_exps_b = nullptr;  // [n_embd, n_expert]
    Tensor* exp_probs_b = nullptr;  // selection_bias: [n_expert]
    Tensor* gate_shexp = nullptr;   // shared experts: [n_embd, n_shared x n_ff]
    Tensor* up_shexp = nullptr;
    Tensor* down_shexp = nullptr;
    Tensor* gate_inp_shexp = nullptr;  // [n_embd]: the shared expert's output times sigmoid(x . it) (Qwen3.5-MoE)
    Tensor* wq_a = nullptr;       // latent attention: [n_embd, q_lora_rank]
    Tensor* q_a_norm = nullptr;   // [q_lora_rank]
    Tensor* wq_b = nullptr;       // [q_lora_rank, n_head x (qk_nope + rope)] (wq when q_lora_rank is 0)
    Tensor* wkv_a_mqa = nullptr;  // [n_embd, kv_lora_rank + rope]
    Tensor* kv_a_norm = nullptr;  // [kv_lora_rank]
    Tensor* wk_b = nullptr;       // [qk_nope, kv_lora_rank, n_head]
    Tensor* wv_b = nullptr;       // [kv_lora_rank, v_head, n_head]
    Tensor* conv_in = nullptr;      // LFM2's short convolution: shortconv.in_proj [n_embd, 3 n_embd] (b, c, x)
    Tensor* conv_kernel = nullptr;  // shortconv.conv [conv_kernel, n_embd]
    Tensor* conv_out = nullptr;     // shortconv.out_proj [n_embd, n_embd]
    Tensor* ssm_in = nullptr;       // Mamba-2: [n_embd, SsmParams::in_rows()] (z, x, B, C, dt)
    Tensor* ssm_conv = nullptr;     // ssm_conv1d [conv_kernel, conv_channels]
    Tensor* ssm_conv_b = nullptr;   // ssm_conv1d.bias [conv_channels] (optional)
    Tensor* ssm_dt_b = nullptr;     // ssm_dt.bias [n_head]
    Tensor* ssm_a = nullptr;        // [1, n_head]: each head's decay rate, -exp(A_log)
    Tensor* ssm_d = nullptr;        // [1, n_head]: each head's skip of x
    Tensor* ssm_norm = nullptr;     // [d_inner / n_group, n_group]: the gated output's grouped RMS norm
    Tensor* ssm_out = nullptr;      // [d_inner, n_embd]
    // The gated delta net (Qwen3.5): ssm_conv, ssm_dt_b, ssm_norm ([head_v]) and ssm_out as above,
    // ssm_a [n_head] (-exp(A_log)), and:
    Tensor* delta_qkv = nullptr;    // attn_qkv [n_embd, conv_channels]: q, k (n_group heads of d_state), v
    Tensor* delta_z = nullptr;      // attn_gate [n_embd, d_inner]: the output norm's gate
    Tensor* ssm_beta = nullptr;     // [n_embd, n_head]: each head's write strength, through a sigmoid
    Tensor* ssm_alpha = nullptr;    // [n_embd, n_head]: each head's step, biased and softplus'd, times A
    // Qwen3-Next: ssm_beta and ssm_alpha fused, ssm_ba [n_embd, 2 n_head]: per key head, the betas of
    // its n_head / n_group value heads, then their alphas. Its older files fuse attn_qkv and attn_gate
    // into ssm_in [n_embd, conv_channels + d_inner], per key head: q, k, its value heads' v, their z.
    Tensor* ssm_beta_alpha = nullptr;

    std::vector<Tensor*> all() const;  // the weights that exist, in the order above
};

struct Decoder {
    Tensor* tokens = nullptr;       // i32 [n_tokens] (input)
    Tensor* positions = nullptr;    // i32 [n_tokens] (input): n_attended - n_tokens ... n_attended - 1;
                                    // none where the model ropes nothing (DecoderParams::rope)
    Tensor* kq_mask = nullptr;      // f16 [n_attended, n_tokens] causal mask (input)
    Tensor* kq_mask_swa = nullptr;  // the same within the sliding window (input), when some layer slides
    Tensor* out_ids = nullptr;      // i32 [n_outputs] (input) named inp_out_ids: the batch rows whose
                                    // logits are computed (output_row_ids), when fewer than n_tokens
    Tensor* kv_idxs = nullptr;      // i32 [n_tokens] (input) named inp_kv_idxs: the cache cells the
                                    // batch's keys and values go to (its positions), when some layer
                                    // keeps a KV cache (n_kv > 0)
    Tensor* state_ids = nullptr;    // i32 [1] (input) named inp_s_ids: the sequence's slot in each
                                    // layer's scan state (0), when some layer is Mamba-2's
    Tensor* tok_embd = nullptr;     // [n_embd, n_vocab]
    std::vector<LayerWeights> layers;
    std::vector<Tensor*> k_cache;  // per layer [n_embd_kv, n_kv] f32 (persistent, like weights);
    std::vector<Tensor*> v_cache;  // latent attention: k_cache alone, [kv_lora_rank + rope, n_kv];
                                   // nullptr for a hybrid's recurrent layers
    // Per layer of a hybrid, its recurrent state (persistent; nullptr for its attention layers),
    // read at the batch's start and (with a cache, n_kv > 0) written at its end: the convolution's
    // last conv_kernel - 1 inputs, [conv_kernel - 1, conv_channels] f32 (cache_r_l<il>), and
    // Mamba-2's scan state, [d_state, head_dim, n_head] f32 (cache_s_l<il>; empty for LFM2).
    std::vector<Tensor*> conv_state;
    std::vector<Tensor*> ssm_state;
    Tensor* out_norm = nullptr;
    Tensor* output = nullptr;       // [n_embd, n_vocab]; tok_embd itself when params.tied_output
    Tensor* output_b = nullptr;     // output.bias (some Phi-3 files)
    Tensor* rope_factors = nullptr; // f32 [rope dims / 2] named params.rope_factors, else nullptr
    Tensor* logits = nullptr;       // f32 [n_vocab, n_logits] (output), named result_output
    // What to build the graph from, in order: the cache writes of each layer, then the logits, so
    // that every layer's attention runs after its cache is written.
    std::vector<Tensor*> graph_outputs;

    // Weights and caches: the tensors that live in a weights buffer, outside the compute graph's
    // (each once: a tied output is the embedding).
    std::vector<Tensor*> weights() const;
    std::vector<Tensor*> inputs() const;
};

// Llama's decoder (build_model with llama's architecture, models/architectures.hpp) in ctx
// (metadata only: allocate and fill separately).
Result<Decoder> build_decoder(Context& ctx, const DecoderParams& params, const WeightTypes& types = {});

// Causal mask values for kq_mask: 0 where key j <= query i's position, -inf elsewhere
// ([n_kv, n_tokens] row-major; the queries are the last n_tokens positions). window > 0 also
// masks keys `window` or more positions behind the query (sliding-window attention). n_cells >
// n_kv: [n_cells, n_tokens], the cells past n_kv empty and masked (DecoderParams::kv_cells).
std::vector<float> causal_mask_values(int n_kv, int n_tokens, int window = 0, int n_cells = 0);
// Positions of the batch's tokens: n_attended - n_tokens, ..., n_attended - 1.
std::vector<int32_t> batch_positions(const DecoderParams& params);
// The batch rows whose logits are computed (out_ids): n_tokens - n_logits, ..., n_tokens - 1.
std::vector<int32_t> output_row_ids(const DecoderParams& params);

}  // namespace xb
