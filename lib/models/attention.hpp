// One multi-head attention block built from the core ops, for the config's `attention` model
// builder: q/k/v projections of the input, (grouped-query) attention under a causal mask with
// flash_attn_ext or mul_mat + soft_max_ext + mul_mat, and the output projection.
//
// Without n_kv the block attends over its own batch (self-attention). With n_kv it attends over a
// separate `memory` input of n_kv positions whose last n_tokens are the batch's (a prefix of
// context, as with a KV cache), under the same causal mask.
#pragma once

#include <vector>

#include "core/context.hpp"
#include "core/status.hpp"
#include "core/tensor.hpp"

namespace xb {

struct AttentionParams {
    int n_embd = 256;
    int n_head = 4;
    int n_head_kv = 4;     // < n_head for grouped-query attention
    int n_tokens = 8;
    int n_kv = 0;          // positions attended to; 0: the batch itself
    bool flash_attn = true;
    DType weight_type = DType::F32;

    int head_dim() const { return n_embd / n_head; }
    int n_attended() const { return n_kv > 0 ? n_kv : n_tokens; }
};

struct AttentionBlock {
    Tensor* input;    // f32 [n_embd, n_tokens] (input)
    Tensor* memory;   // f32 [n_embd, n_kv] (input), nullptr for self-attention
    Tensor* kq_mask;  // f16 [n_attended, n_tokens] causal mask (input)
    Tensor* wq;       // [n_embd, n_embd]
    Tensor* wk;       // [n_embd, n_head_kv * head_dim]
    Tensor* wv;
    Tensor* wo;       // [n_embd, n_embd]
    Tensor* output;   // f32 [n_embd, n_tokens] (output)

    std::vector<Tensor*> weights() const { return {wq, wk, wv, wo}; }
    std::vector<Tensor*> inputs() const;
};

Result<AttentionBlock> build_attention(Context& ctx, const AttentionParams& params);

}  // namespace xb
