// The mixture-of-experts feed-forward network (Mixtral, Qwen3-MoE, gpt-oss), as llama.cpp's
// build_moe_ffn computes it: the router's logits pick each token's n_used experts (top-k), their
// weights come from a softmax (over all experts, or over the chosen ones), and the output is the
// weighted sum of the chosen experts' gated FFNs, each computed with mul_mat_id so that only the
// chosen experts' rows are read.
#pragma once

#include "core/context.hpp"
#include "core/tensor.hpp"
#include "models/decoder.hpp"
#include "models/decoder_blocks.hpp"

namespace xb::decoder {

// x [n_embd, n_tokens] -> [n_embd, n_tokens], named ffn_moe_out; the steps carry llama.cpp's
// names (ffn_moe_logits, ffn_moe_probs, ffn_moe_topk, ffn_moe_weights, ffn_moe_up, ffn_moe_gate,
// ffn_moe_down, ffn_moe_weighted).
// `glu`: the experts' activation (SwiGluOai: gpt-oss's clamped SwiGLU with its fixed constants).
Tensor* moe_ffn(Context& ctx, const DecoderParams& p, const LayerNames& n, const LayerWeights& w, Tensor* x, GluOp glu);

}  // namespace xb::decoder
