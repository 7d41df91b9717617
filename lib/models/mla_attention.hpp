// Multi-head latent attention (DeepSeek V2/V3, Kimi K2) as llama.cpp's deepseek2 graph computes
// it in the absorbed form: the cache holds one latent per token (kv_lora_rank values, normed, and
// the key's rope part), every head attends to it as one shared key/value head, each head's query
// is first carried into the latent space through attn_k_b, and each head's output is carried out
// of it through attn_v_b. See MlaParams (models/decoder.hpp) for the weights' shapes.
#pragma once

#include "core/context.hpp"
#include "core/tensor.hpp"
#include "models/decoder.hpp"
#include "models/decoder_blocks.hpp"

namespace xb::decoder {

// The attention half of layer il: x (normed) [n_embd, n_tokens] -> [n_embd, n_tokens], named
// attn_out-<il>; the steps carry llama.cpp's names (q, kv_cmpr_pe, kv_cmpr, k_pe, q_nope, q_pe,
// q_nope_absorbed, Qcur, Kcur, Vcur, kqv_out). The cache write is appended to m.graph_outputs.
Tensor* mla_attention(Context& ctx, const DecoderParams& p, Decoder& m, const LayerNames& n, int il, Tensor* x);

// The scores' scale: 1/sqrt(qk_nope + rope), times DeepSeek's YaRN magnitude squared.
float mla_kq_scale(const DecoderParams& p);

}  // namespace xb::decoder
