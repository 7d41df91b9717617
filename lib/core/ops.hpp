// Op builders: create the tensor that computes an op, after checking shapes and types.
//
// Every builder returns a non-null tensor. On bad arguments it records the error on the context
// (see Context::fail) and returns a placeholder; Graph::build then fails with that error.
// Semantics follow ggml's ops of the same name; shapes are written innermost dim first.
#pragma once

#include <array>
#include <cstdint>

#include "core/context.hpp"
#include "core/op_params.hpp"
#include "core/tensor.hpp"

namespace xb {

// --- element-wise ----------------------------------------------------------------------------------
// Binary ops: result has a's type and shape; b (f32, f16 or bf16) is tiled along every dim where
// a's size is a multiple of b's.
Tensor* add(Context& ctx, Tensor* a, Tensor* b);
Tensor* sub(Context& ctx, Tensor* a, Tensor* b);
Tensor* mul(Context& ctx, Tensor* a, Tensor* b);
Tensor* div(Context& ctx, Tensor* a, Tensor* b);
Tensor* add1(Context& ctx, Tensor* a, Tensor* scalar);  // scalar: one element
Tensor* scale(Context& ctx, Tensor* a, float s, float bias = 0.0f);  // a * s + bias
Tensor* sqr(Context& ctx, Tensor* a);
Tensor* sqrt(Context& ctx, Tensor* a);
Tensor* log(Context& ctx, Tensor* a);
Tensor* clamp(Context& ctx, Tensor* a, float min, float max);
Tensor* unary(Context& ctx, Tensor* a, UnaryOp op);
Tensor* neg(Context& ctx, Tensor* a);
Tensor* relu(Context& ctx, Tensor* a);
Tensor* gelu(Context& ctx, Tensor* a);
Tensor* gelu_quick(Context& ctx, Tensor* a);
Tensor* silu(Context& ctx, Tensor* a);
Tensor* tanh(Context& ctx, Tensor* a);
Tensor* sigmoid(Context& ctx, Tensor* a);
Tensor* exp(Context& ctx, Tensor* a);
Tensor* softplus(Context& ctx, Tensor* a);

// Gated linear unit over fused halves: a = [x | g] along dim 0 (ne0 even), result
// [ne0/2, ...] = act(x) * g; with `swapped` the halves trade roles (act(g) * x).
Tensor* glu(Context& ctx, Tensor* a, GluOp op, bool swapped = false);
// Split form: act(a) * b, a and b of the same shape.
Tensor* glu_split(Context& ctx, Tensor* a, Tensor* b, GluOp op);
Tensor* swiglu(Context& ctx, Tensor* a);
Tensor* geglu(Context& ctx, Tensor* a);
// gpt-oss's SwiGLU, split form: x = min(a, limit), g = clamp(b, -limit, limit);
// x * sigmoid(alpha * x) * (g + 1).
Tensor* swiglu_oai(Context& ctx, Tensor* a, Tensor* b, float alpha, float limit);

// --- copies and layout -----------------------------------------------------------------------------
Tensor* dup(Context& ctx, Tensor* a);                // contiguous copy, same type
Tensor* cont(Context& ctx, Tensor* a);               // contiguous copy of a strided tensor
Tensor* cpy(Context& ctx, Tensor* a, Tensor* b);     // a's values into b (type conversion); a view of b
Tensor* cast(Context& ctx, Tensor* a, DType type);   // cpy into a new contiguous tensor of `type`
Tensor* reshape(Context& ctx, Tensor* a, std::array<int64_t, kMaxDims> ne);  // a must be contiguous
Tensor* view(Context& ctx, Tensor* a, std::array<int64_t, kMaxDims> ne, std::array<size_t, 3> nb123, size_t offset);
Tensor* view_1d(Context& ctx, Tensor* a, int64_t ne0, size_t offset);
Tensor* view_2d(Context& ctx, Tensor* a, int64_t ne0, int64_t ne1, size_t nb1, size_t offset);
// Dim i of a becomes dim axes[i] of the result.
Tensor* permute(Context& ctx, Tensor* a, std::array<int, kMaxDims> axes);
Tensor* transpose(Context& ctx, Tensor* a);          // swaps dims 0 and 1
Tensor* repeat(Context& ctx, Tensor* a, Tensor* shape_of);   // a tiled to shape_of's shape
Tensor* repeat_4d(Context& ctx, Tensor* a, std::array<int64_t, kMaxDims> ne);   // a tiled to shape ne
Tensor* concat(Context& ctx, Tensor* a, Tensor* b, int dim);
Tensor* pad(Context& ctx, Tensor* a, std::array<int32_t, kMaxDims> after);   // zeros at the end of each dim
Tensor* arange(Context& ctx, float start, float stop, float step);         // f32 [ceil((stop-start)/step)]
Tensor* get_rows(Context& ctx, Tensor* a, Tensor* rows);   // a [n0, n1, n2, n3], rows i32 [m, n2, n3]
// Writes the rows of `src` (any float type, [n0, m, n2, n3]) into `dst` at i32/i64 indices `rows` [m, r2, r3]
// (broadcast over dims 2 and 3); the result is a view of dst.
Tensor* set_rows(Context& ctx, Tensor* dst, Tensor* src, Tensor* rows);

// --- reductions ------------------------------------------------------------------------------------
Tensor* sum(Context& ctx, Tensor* a);        // f32 [1]
Tensor* sum_rows(Context& ctx, Tensor* a);   // [1, n1, n2, n3]
Tensor* mean(Context& ctx, Tensor* a);       // [1, n1, n2, n3]
Tensor* argmax(Context& ctx, Tensor* a);     // a float matrix [n0, n1] -> i32 [n1]; first max on ties
// i32 indices that order each row (dim 0) of float a, ascending or descending; equal values keep
// their order. top_k: the first k of the descending order, a view [k, n1, n2, n3] of the argsort.
Tensor* argsort(Context& ctx, Tensor* a, SortOrder order);
Tensor* top_k(Context& ctx, Tensor* a, int k);

// --- normalisation and attention -------------------------------------------------------------------
Tensor* norm(Context& ctx, Tensor* a, float eps);
Tensor* rms_norm(Context& ctx, Tensor* a, float eps);
Tensor* l2_norm(Context& ctx, Tensor* a, float eps);  // each row / max(its L2 norm, eps)
// softmax over dim 0 of a*scale + slope*mask. mask (f32/f16, optional) is [n0, >= n1, m2, m3] with
// n2 % m2 == 0 and n3 % m3 == 0; slope is 1, or ALiBi's per-head (dim 2) slope when max_bias > 0.
Tensor* soft_max(Context& ctx, Tensor* a);
// sinks (optional, f32 [n2]): one more logit per head (dim 2) that takes part in each row's
// normalisation but has no output (gpt-oss's attention sinks).
Tensor* soft_max_ext(Context& ctx, Tensor* a, Tensor* mask, float scale, float max_bias, Tensor* sinks = nullptr);
Tensor* diag_mask_inf(Context& ctx, Tensor* a, int n_past);  // a[i0, i1] = -inf where i0 > n_past + i1

// a [head_dim, n_head, n_tokens, 1], positions i32 [n_tokens]. freq_factors (optional, f32
// [n_dims / 2], Llama 3.1's rope scaling) divides each pair's angle.
Tensor* rope(Context& ctx, Tensor* a, Tensor* positions, const RopeParams& params, Tensor* freq_factors = nullptr);

// a [k, m, a2, a3] and b [k, n, b2, b3] (f32/f16/bf16) with b2 % a2 == 0, b3 % a3 == 0
// -> f32 [m, n, b2, b3]: result[i, j] = dot(row i of a, row j of b). Any strides.
Tensor* mul_mat(Context& ctx, Tensor* a, Tensor* b);
// a [m, k, a2, a3], b [n, k, b2, b3] -> f32 [m, n, b2, b3]: result[i, j] = sum_l a[i, l] * b[j, l].
Tensor* out_prod(Context& ctx, Tensor* a, Tensor* b);

// q [d, n_q, h, s] f32, k [d, n_kv, h_kv, s] and v [dv, n_kv, h_kv, s] (f32/f16/bf16), h % h_kv == 0,
// mask (optional, f16/f32) [n_kv, >= n_q, m2, m3] broadcast over heads and sequences -> f32 [dv, h, n_q, s] (heads before tokens, as ggml).
// softcap > 0 applies softcap * tanh(x / softcap) to the scores. sinks (optional, f32 [h]): a logit
// per head that takes part in the softmax's normalisation with no value (soft_max_ext's sinks).
Tensor* flash_attn_ext(Context& ctx, Tensor* q, Tensor* k, Tensor* v, Tensor* mask, float scale,
                       float max_bias = 0.0f, float softcap = 0.0f, Tensor* sinks = nullptr);

// --- mixture of experts ------------------------------------------------------------------------------
// as [k, m, n_as] (the experts' weight matrices, a float or quantized type), b [k, n_b, n_t] f32 with
// n_b 1 or n_used, ids i32 [n_used, n_t] (every id in [0, n_as)) -> f32 [m, n_used, n_t]:
// result[:, e, t] = as[:, :, ids[e, t]] x b[:, e % n_b, t] (mul_mat's product of one column).
Tensor* mul_mat_id(Context& ctx, Tensor* as, Tensor* b, Tensor* ids);
// a [n, n_used, n_t] f32 plus the row of b [n, n_as] f32 that ids i32 [n_used, n_t] picks per
// (slot, token): per-expert biases.
Tensor* add_id(Context& ctx, Tensor* a, Tensor* b, Tensor* ids);

// --- recurrent layers (state-space models, linear attention) -----------------------------------------
// All f32 with packed rows (dim 0 contiguous); the states are carried by the caller between
// batches (the result holds the new ones).
//
// Depthwise causal convolution: sx [d_conv - 1 + n_t, d_inner, n_s] (each channel's window: the
// previous d_conv - 1 inputs, then the batch's n_t), c [d_conv, d_inner] -> [d_inner, n_t, n_s]:
// result[i, t, s] = sum_j sx[t + j, i, s] * c[j, i].
Tensor* ssm_conv(Context& ctx, Tensor* sx, Tensor* c);
// Mamba's selective scan over n_t tokens, per sequence s from the state s0[:, :, :, ids[s]]:
// state = state * exp(dt' A) + dt' x B, y = state . C, where dt' = softplus(dt). s [d_state,
// head_dim, n_head, >= max id + 1] (contiguous), x [head_dim, n_head, n_t, n_s], dt [n_head, n_t,
// n_s] (contiguous), A [1, n_head] (Mamba-2, one decay per head) or [d_state, n_head] (Mamba-1)
// contiguous, B and C [d_state, n_group, n_t, n_s] (head h reads group h / (n_head / n_group)),
// ids i32 [n_s]. -> f32 [nelements(x) + d_state * head_dim * n_head * n_s]: y as x's shape,
// then each sequence's final state (ggml's ssm_scan with one state snapshot).
Tensor* ssm_scan(Context& ctx, Tensor* s, Tensor* x, Tensor* dt, Tensor* A, Tensor* B, Tensor* C, Tensor* ids);
// The gated delta rule (Qwen3.5, Qwen3-Next; Kimi's KDA with a gate per key dim), per head h and
// sequence s from its state S ([S_v, S_v]: element i + j S_v is S[i][j], key dim i, value dim j),
// token by token: S[i][:] *= exp(g) (g one value per head, or g[i]), d = (v - S^T k) beta,
// S += k d^T, out = S^T q / sqrt(S_v). q and k [S_v, H_k, n_t, n_s_k], v [S_v, H, n_t, n_s] with
// H % H_k == 0 (head h reads q/k head h % H_k) and n_s % n_s_k == 0, g [1 or S_v, H, n_t, n_s] and
// beta [1, H, n_t, n_s] contiguous, state [S_v, S_v, H, n_s] contiguous -> f32 [S_v H, n_t n_s +
// S_v n_s]: the outputs [S_v, H, n_t, n_s], then the final states (ggml's gated_delta_net with one
// state snapshot).
Tensor* gated_delta_net(Context& ctx, Tensor* q, Tensor* k, Tensor* v, Tensor* g, Tensor* beta, Tensor* state);

// ALiBi slope of head h of n_head (ggml's formula); 1 when max_bias == 0.
float alibi_slope(int h, int n_head, float max_bias);

}  // namespace xb
