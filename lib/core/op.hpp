// The operations a graph node can compute, and their properties.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace xb {

enum class Op : uint8_t {
    None,          // a leaf: weight, input or constant
    Dup,           // contiguous copy of src0
    Add, Sub, Mul, Div,   // src0 (op) src1, src1 broadcast along dims where it divides src0
    Add1,          // src0 + scalar src1
    Scale,         // src0 * s + b           params f32: s, b
    Sqr, Sqrt, Log,
    Sum,           // sum of all elements -> [1]
    SumRows,       // sum over dim 0 -> [1, ne1, ne2, ne3]
    Mean,          // mean over dim 0 -> [1, ne1, ne2, ne3]
    Argmax,        // index of the max of each row of a matrix -> i32 [ne1]
    Repeat,        // src0 tiled to the shape of src1
    Concat,        // src0 and src1 joined along dim     params i32: dim
    Unary,         // element-wise activation            params i32: UnaryOp
    Glu,           // gated linear unit                  params i32: GluOp, swapped
    Clamp,         //                                    params f32: min, max
    Norm,          // (x - mean) / sqrt(var + eps)       params f32: eps
    RmsNorm,       // x / sqrt(mean(x^2) + eps)          params f32: eps
    SoftMax,       // softmax(x*scale + slope*mask)      params f32: scale, max_bias
    DiagMaskInf,   // -inf above the diagonal shifted by n_past   params i32: n_past
    Rope,          // rotary position embedding (see RopeParams)
    MulMat,        // src1 x src0^T -> f32 [ne01, ne11, ne12, ne13]
    OutProd,       // sum over dim 1 of outer products -> f32 [ne00, ne10, ne12, ne13]
    GetRows,       // rows of src0 picked by i32 indices src1
    SetRows,       // rows of src0 written into view_src (also src2) at indices src1 (result is a view)
    Cpy,           // src0 converted into src1's layout (result is a view of src1)
    Cont,          // contiguous copy of a possibly strided src0
    Reshape, View, Permute, Transpose,   // share storage with their source, compute nothing
    Pad,           // zero padding at the end of each dim   params i32: p0..p3
    Arange,        // start, start+step, ...            params f32: start, stop, step
    FlashAttnExt,  // softmax(q k^T * scale + mask) v    params f32: scale, max_bias, softcap
    MulMatId,      // per (expert slot, token): src0's matrix src2[e, t] x src1's column -> f32 (mixture of experts)
    Argsort,       // i32 indices ordering each row of src0  params i32: SortOrder
    AddId,         // src0 + the row of src1 that i32 src2 picks per (slot, token) (per-expert biases)
    L2Norm,        // x / max(sqrt(sum(x^2)), eps)     params f32: eps
    SsmConv,       // causal depthwise convolution of a window (Mamba, LFM2's short conv)
    SsmScan,       // selective state-space scan (Mamba-2): outputs and final states
    GatedDeltaNet, // gated delta-rule linear attention (Qwen3.5, Qwen3-Next): outputs and final states
};
inline constexpr int kOpCount = static_cast<int>(Op::GatedDeltaNet) + 1;

// Softplus: log(1 + exp(x)).
enum class UnaryOp : int32_t { Neg, Relu, Gelu, GeluQuick, Silu, Tanh, Sigmoid, Exp, Softplus };
inline constexpr int kUnaryOpCount = static_cast<int>(UnaryOp::Softplus) + 1;

// SwiGluOai: gpt-oss's clamped SwiGLU, min(x, limit) * sigmoid(alpha min(x, limit)) *
// (clamp(g, -limit, limit) + 1), split form only (GluParams' alpha and limit).
enum class GluOp : int32_t { SwiGlu, GeGlu, SwiGluOai };
inline constexpr int kGluOpCount = static_cast<int>(GluOp::SwiGluOai) + 1;

enum class SortOrder : int32_t { Ascending, Descending };

// Rope modes (ggml's values): normal rotates adjacent pairs (x[2i], x[2i+1]); neox rotates
// (x[i], x[i + n_dims/2]).
enum class RopeMode : int32_t { Normal = 0, Neox = 2 };

const char* op_name(Op op);             // "mul_mat"
const char* unary_op_name(UnaryOp op);  // "silu"
const char* glu_op_name(GluOp op);      // "swiglu"
std::optional<Op> op_from_name(std::string_view name);
std::optional<UnaryOp> unary_op_from_name(std::string_view name);
std::optional<GluOp> glu_op_from_name(std::string_view name);

// Reshape/view/permute/transpose: the result aliases its source and nothing is computed.
inline bool op_is_view(Op op) { return op == Op::Reshape || op == Op::View || op == Op::Permute || op == Op::Transpose; }
// The op's result may be written over src0's memory (element-wise in the same layout); the graph
// allocator uses this to reuse a parent's memory in place.
bool op_can_inplace(Op op);
// Of an in-place op, the sources its result may overwrite: every source for the binary
// element-wise ops and the split GLU (they read each at the position they write), src0 alone for
// the others.
int op_inplace_sources(Op op);

}  // namespace xb
