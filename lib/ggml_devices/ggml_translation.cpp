#include "ggml_devices/ggml_translation.hpp"

#include <ggml.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include "core/op_params.hpp"
#include "ggml_devices/ggml_types.hpp"

namespace xb::ggml_devices {

namespace {

Status refused(const Tensor& node, const std::string& why) {
    return Status(StatusCode::NotSupported, "node '" + node.display_name() + "' (" + node.op_label() + "): " + why);
}

std::optional<ggml_unary_op> unary_of(UnaryOp op) {
    switch (op) {
        case UnaryOp::Neg: return GGML_UNARY_OP_NEG;
        case UnaryOp::Relu: return GGML_UNARY_OP_RELU;
        case UnaryOp::Gelu: return GGML_UNARY_OP_GELU;
        case UnaryOp::GeluQuick: return GGML_UNARY_OP_GELU_QUICK;
        case UnaryOp::Silu: return GGML_UNARY_OP_SILU;
        case UnaryOp::Tanh: return GGML_UNARY_OP_TANH;
        case UnaryOp::Sigmoid: return GGML_UNARY_OP_SIGMOID;
        case UnaryOp::Exp: return GGML_UNARY_OP_EXP;
        case UnaryOp::Softplus: return GGML_UNARY_OP_SOFTPLUS;
    }
    return std::nullopt;
}

std::optional<ggml_glu_op> glu_of(GluOp op) {
    switch (op) {
        case GluOp::SwiGlu: return GGML_GLU_OP_SWIGLU;
        case GluOp::GeGlu: return GGML_GLU_OP_GEGLU;
        case GluOp::SwiGluOai: return GGML_GLU_OP_SWIGLU_OAI;
    }
    return std::nullopt;
}

// ggml_can_mul_mat and ggml_can_out_prod are internal to ggml.c: the same conditions, stated here.
bool products_fit(const ggml_tensor* a, const ggml_tensor* b, int shared_dim) {
    return a->ne[shared_dim] == b->ne[shared_dim] && b->ne[2] % a->ne[2] == 0 && b->ne[3] % a->ne[3] == 0;
}

// What ggml's builder for `node` asserts on, given its translated sources; "" when nothing.
std::string builder_refusal(const Tensor& node, const std::array<ggml_tensor*, kMaxSrc>& s) {
    ggml_tensor* a = s[0];
    ggml_tensor* b = s[1];
    ggml_tensor* c = s[2];
    switch (node.op) {
        case Op::Add: case Op::Sub: case Op::Mul: case Op::Div:
            return ggml_can_repeat(b, a) ? "" : "ggml cannot broadcast src1 to src0";
        case Op::Add1:
            return ggml_is_scalar(b) ? "" : "ggml's add takes a one-element src1 for add1";
        case Op::Unary:
            return ggml_is_contiguous_rows(a) ? "" : "ggml's unary ops need packed rows";
        case Op::Glu:
            if (!ggml_is_contiguous_1(a) || (b != nullptr && (!ggml_is_contiguous_1(b) || !ggml_are_same_shape(a, b) ||
                                                              a->type != b->type))) {
                return "ggml's glu needs packed rows and, split, two sources of one shape and type";
            }
            return "";
        case Op::Concat:
            return a->type == b->type ? "" : "ggml's concat needs one type";
        case Op::Argmax:
            return ggml_is_matrix(a) ? "" : "ggml's argmax takes a matrix";
        case Op::Arange: {
            const ArangeParams p = ArangeParams::load(node);
            return p.stop > p.start ? "" : "ggml's arange needs stop > start";
        }
        case Op::SoftMax: {
            const SoftMaxParams p = SoftMaxParams::load(node);
            if (!ggml_is_contiguous(a)) return "ggml's soft_max needs a contiguous src0";
            if (b != nullptr && (!ggml_is_contiguous(b) || b->ne[1] < a->ne[1] || a->ne[2] % b->ne[2] != 0 ||
                                 a->ne[3] % b->ne[3] != 0)) {
                return "ggml's soft_max needs a contiguous mask covering the rows";
            }
            if (p.max_bias > 0.0f && b == nullptr) return "ggml's soft_max needs a mask with max_bias";
            return "";
        }
        case Op::Rope: {
            const RopeParams p = RopeParams::load(node);
            if (!ggml_is_vector(b) || b->type != GGML_TYPE_I32 || a->ne[2] != b->ne[0]) {
                return "ggml's rope needs one i32 position per token";
            }
            if (c != nullptr && (c->type != GGML_TYPE_F32 || c->ne[0] < p.n_dims / 2)) {
                return "ggml's rope needs f32 frequency factors for every pair";
            }
            return "";
        }
        case Op::MulMat:
            if (ggml_is_transposed(a)) return "ggml's mul_mat refuses a transposed src0";
            return products_fit(a, b, 0) ? "" : "ggml cannot multiply these shapes";
        case Op::OutProd:
            if (ggml_is_transposed(a)) return "ggml's out_prod refuses a transposed src0";
            return products_fit(a, b, 1) ? "" : "ggml cannot multiply these shapes";
        case Op::GetRows:
            return b->type == GGML_TYPE_I32 && a->ne[2] == b->ne[1] && a->ne[3] == b->ne[2] && b->ne[3] == 1
                       ? ""
                       : "ggml's get_rows needs i32 rows [m, ne2, ne3]";
        case Op::SetRows: {
            // ggml's order: the destination, the rows' values, their indices.
            ggml_tensor* dst = c;
            ggml_tensor* values = a;
            ggml_tensor* rows = b;
            const bool fits = dst->ne[0] == values->ne[0] && dst->ne[2] == values->ne[2] && dst->ne[3] == values->ne[3] &&
                              values->ne[1] == rows->ne[0] && values->ne[2] % rows->ne[1] == 0 &&
                              values->ne[3] % rows->ne[2] == 0 && rows->ne[3] == 1;
            if (!fits) return "ggml's set_rows needs rows of the destination's shape";
            if (values->type != GGML_TYPE_F32 && values->type != GGML_TYPE_F16) return "ggml's set_rows writes f32 or f16 values";
            if (rows->type != GGML_TYPE_I32 && rows->type != GGML_TYPE_I64) return "ggml's set_rows needs i32 or i64 indices";
            return ggml_is_contiguous_rows(dst) && ggml_is_contiguous_rows(values) ? "" : "ggml's set_rows needs packed rows";
        }
        case Op::Cpy:
            return ggml_nelements(a) == ggml_nelements(b) ? "" : "ggml's cpy needs as many elements on both sides";
        case Op::FlashAttnExt: {
            ggml_tensor* mask = s[3];
            ggml_tensor* sinks = s[4];
            // q (a) against k (b): ggml_can_mul_mat(k, q).
            if (!products_fit(b, a, 0) || a->ne[3] != b->ne[3] || a->ne[3] != c->ne[3]) {
                return "ggml's flash_attn_ext cannot take these shapes";
            }
            if (mask != nullptr && (mask->type != GGML_TYPE_F16 || !ggml_is_contiguous(mask) || a->ne[2] % mask->ne[2] != 0 ||
                                    a->ne[3] % mask->ne[3] != 0)) {
                return "ggml's flash_attn_ext needs a contiguous f16 mask";
            }
            if (FlashAttnParams::load(node).max_bias > 0.0f && mask == nullptr) return "ggml's flash_attn_ext needs a mask with max_bias";
            if (sinks != nullptr && (sinks->type != GGML_TYPE_F32 || sinks->ne[0] != a->ne[2])) {
                return "ggml's flash_attn_ext needs f32 sinks, one per head";
            }
            return "";
        }
        case Op::MulMatId:
            if (ggml_is_transposed(a) || c->type != GGML_TYPE_I32 || a->ne[3] != 1 || b->ne[3] != 1 || c->ne[2] != 1 ||
                c->ne[3] != 1 || c->ne[1] != b->ne[2] || a->ne[0] != b->ne[0] || c->ne[0] % b->ne[1] != 0) {
                return "ggml's mul_mat_id cannot take these shapes";
            }
            return "";
        case Op::AddId:
            return a->ne[0] == b->ne[0] && a->ne[1] == c->ne[0] && a->ne[2] == c->ne[1] && c->type == GGML_TYPE_I32
                       ? ""
                       : "ggml's add_id cannot take these shapes";
        // ggml's CPU backend claims l2_norm of every type, then aborts on any but f32.
        case Op::L2Norm:
            return a->type == GGML_TYPE_F32 ? "" : "ggml computes l2_norm of f32 only";
        // The recurrent ops' own rules are ggml's already, but for its layouts: ggml reads each
        // operand's rows (and ssm_conv's windows) as packed blocks.
        case Op::SsmConv:
            return ggml_is_contiguous(a) && ggml_is_contiguous_rows(b) ? "" : "ggml's ssm_conv needs a contiguous sx";
        case Op::SsmScan:
            for (ggml_tensor* t : {b, s[4], s[5]}) {
                if (t->nb[1] != static_cast<size_t>(t->ne[0]) * t->nb[0]) return "ggml's ssm_scan needs x, B and C with packed rows of rows";
            }
            return "";
        case Op::GatedDeltaNet:
            for (ggml_tensor* t : {a, b, c}) {
                if (!ggml_is_contiguous_rows(t)) return "ggml's gated_delta_net needs packed rows of q, k and v";
            }
            return "";
        case Op::Repeat: {
            // ggml_repeat_4d: every dim of the result a multiple of the source's (an empty source too).
            if (ggml_is_empty(a)) return "";
            for (int i = 0; i < 4; ++i) {
                if (node.ne[static_cast<size_t>(i)] % a->ne[i] != 0) return "ggml cannot repeat to this shape";
            }
            return "";
        }
        default: return "";
    }
}

// The ggml tensors translating `node` can make at most: its result, one tensor its builder may add
// (a view of the destination), and a leaf for each source. A bound, not a guess: a context that
// runs out of room is an abort inside ggml.
size_t tensors_needed(const Tensor& node) {
    size_t n = 2;
    for (const Tensor* src : node.src) n += src != nullptr ? 1 : 0;
    return n;
}

}  // namespace

GraphTranslation::GraphTranslation(BufferOf buffer_of) : buffer_of_(std::move(buffer_of)) {}

GraphTranslation::~GraphTranslation() {
    if (ctx_ != nullptr) ggml_free(ctx_);
}

Status GraphTranslation::make_context(size_t n_tensors, bool with_graphs) {
    // Metadata only: the tensors' bytes are the xbackend buffers'.
    const size_t size = n_tensors + 16;
    ggml_init_params params{};
    params.mem_size = ggml_tensor_overhead() * size + (with_graphs ? 2 * ggml_graph_overhead_custom(size, false) : 0);
    params.no_alloc = true;
    ctx_ = ggml_init(params);
    if (ctx_ == nullptr) return Status(StatusCode::OutOfMemory, "ggml: no memory for a graph's context");
    if (with_graphs) {
        graph_ = ggml_new_graph_custom(ctx_, size, false);
        segment_ = ggml_new_graph_custom(ctx_, size, false);
    }
    return Status::ok();
}

ggml_cgraph* GraphTranslation::segment(int i0, int i1) {
    ggml_graph_clear(segment_);
    for (int i = i0; i < i1; ++i) ggml_graph_add_node(segment_, ggml_graph_node(graph_, i));
    return segment_;
}

int GraphTranslation::n_nodes() const { return graph_ == nullptr ? 0 : ggml_graph_n_nodes(graph_); }

Status GraphTranslation::place(const Tensor& t, ggml_tensor* g) const {
    if (!buffer_of_) return Status::ok();
    ggml_backend_buffer* buffer = buffer_of_(t);
    if (buffer == nullptr || t.data == nullptr) {
        return Status(StatusCode::InvalidArgument, "tensor '" + t.display_name() + "' is not in this device's memory");
    }
    g->buffer = buffer;
    g->data = t.data;
    return Status::ok();
}

Result<ggml_tensor*> GraphTranslation::leaf(const Tensor& t) {
    const std::optional<ggml_type> type = ggml_type_of(t.type);
    if (!type) return Status(StatusCode::NotSupported, "tensor '" + t.display_name() + "': ggml has no type " + dtype_name(t.type));
    ggml_tensor* g = ggml_new_tensor(ctx_, *type, kMaxDims, t.ne.data());
    std::copy(t.nb.begin(), t.nb.end(), g->nb);
    ggml_set_name(g, t.name.c_str());
    XB_RETURN_IF_ERROR(place(t, g));
    return g;
}

Result<ggml_tensor*> GraphTranslation::tensor_of(const Tensor& t) {
    if (const auto it = tensors_.find(&t); it != tensors_.end()) return it->second;
    ggml_tensor* g = nullptr;
    if (in_graph_.count(&t) != 0 && !computes_nothing(t)) {
        XB_ASSIGN_OR_RETURN(g, build(t));
    } else {
        XB_ASSIGN_OR_RETURN(g, leaf(t));
    }
    tensors_.emplace(&t, g);
    return g;
}

Result<ggml_tensor*> GraphTranslation::build(const Tensor& node) {
    std::array<ggml_tensor*, kMaxSrc> s{};
    for (size_t j = 0; j < kMaxSrc; ++j) {
        const Tensor* src = node.src[j];
        if (src == nullptr) continue;
        XB_ASSIGN_OR_RETURN(s[j], tensor_of(*src));
    }
    const std::optional<ggml_type> out_type = ggml_type_of(node.type);
    if (!out_type) return refused(node, std::string("ggml has no type ") + dtype_name(node.type));
    if (const std::string why = builder_refusal(node, s); !why.empty()) return refused(node, why);

    ggml_context* ctx = ctx_;
    ggml_tensor* a = s[0];
    ggml_tensor* b = s[1];
    ggml_tensor* c = s[2];
    ggml_tensor* g = nullptr;
    switch (node.op) {
        case Op::Dup: g = ggml_dup(ctx, a); break;
        case Op::Add: g = ggml_add(ctx, a, b); break;
        case Op::Sub: g = ggml_sub(ctx, a, b); break;
        case Op::Mul: g = ggml_mul(ctx, a, b); break;
        case Op::Div: g = ggml_div(ctx, a, b); break;
        // ggml retired add1 for add, which broadcasts a one-element src1 as add1 did.
        case Op::Add1: g = ggml_add(ctx, a, b); break;
        case Op::Scale: {
            const ScaleParams p = ScaleParams::load(node);
            g = ggml_scale_bias(ctx, a, p.scale, p.bias);
            break;
        }
        case Op::Sqr: g = ggml_sqr(ctx, a); break;
        case Op::Sqrt: g = ggml_sqrt(ctx, a); break;
        case Op::Log: g = ggml_log(ctx, a); break;
        case Op::Sum: g = ggml_sum(ctx, a); break;
        case Op::SumRows: g = ggml_sum_rows(ctx, a); break;
        case Op::Mean: g = ggml_mean(ctx, a); break;
        case Op::Argmax: g = ggml_argmax(ctx, a); break;
        case Op::Repeat: g = ggml_repeat_4d(ctx, a, node.ne[0], node.ne[1], node.ne[2], node.ne[3]); break;
        case Op::Concat: g = ggml_concat(ctx, a, b, ConcatParams::load(node).dim); break;
        case Op::Unary: {
            const std::optional<ggml_unary_op> op = unary_of(UnaryParams::load(node).op);
            if (!op) return refused(node, "no ggml counterpart");
            g = ggml_unary(ctx, a, *op);
            break;
        }
        case Op::Glu: {
            const GluParams p = GluParams::load(node);
            const std::optional<ggml_glu_op> op = glu_of(p.op);
            if (!op) return refused(node, "no ggml counterpart");
            if (p.op == GluOp::SwiGluOai) {
                if (b == nullptr) return refused(node, "ggml's swiglu_oai takes the split form only");
                g = ggml_swiglu_oai(ctx, a, b, p.alpha, p.limit);
            } else {
                g = b == nullptr ? ggml_glu(ctx, a, *op, p.swapped) : ggml_glu_split(ctx, a, b, *op);
            }
            break;
        }
        case Op::Clamp: {
            const ClampParams p = ClampParams::load(node);
            g = ggml_clamp(ctx, a, p.min, p.max);
            break;
        }
        case Op::Norm: g = ggml_norm(ctx, a, NormParams::load(node).eps); break;
        case Op::RmsNorm: g = ggml_rms_norm(ctx, a, NormParams::load(node).eps); break;
        case Op::L2Norm: g = ggml_l2_norm(ctx, a, NormParams::load(node).eps); break;
        case Op::SoftMax: {
            const SoftMaxParams p = SoftMaxParams::load(node);
            g = ggml_soft_max_ext(ctx, a, b, p.scale, p.max_bias);
            if (c != nullptr) ggml_soft_max_add_sinks(g, c);
            break;
        }
        case Op::DiagMaskInf: g = ggml_diag_mask_inf(ctx, a, DiagMaskInfParams::load(node).n_past); break;
        case Op::Rope: {
            const RopeParams p = RopeParams::load(node);
            g = ggml_rope_ext(ctx, a, b, c, p.n_dims, static_cast<int>(p.mode), p.n_ctx_orig, p.freq_base, p.freq_scale,
                              p.ext_factor, p.attn_factor, p.beta_fast, p.beta_slow);
            break;
        }
        case Op::MulMat:
            g = ggml_mul_mat(ctx, a, b);
            // llama.cpp asks f32 accumulation of the attention scores: a product whose src0 is not a
            // weight (a leaf of its own) but a view of the cache or an activation.
            if (node.src[0]->op != Op::None || node.src[0]->is_view()) ggml_prec_set_acc(g, GGML_PREC_F32);
            break;
        case Op::OutProd: g = ggml_out_prod(ctx, a, b); break;
        case Op::GetRows: g = ggml_get_rows(ctx, a, b); break;
        case Op::SetRows: g = ggml_set_rows(ctx, c, a, b); break;
        case Op::Cpy: g = ggml_cpy(ctx, a, b); break;
        case Op::Cont: g = ggml_cont(ctx, a); break;
        case Op::Pad: {
            const PadParams p = PadParams::load(node);
            g = ggml_pad(ctx, a, p.after[0], p.after[1], p.after[2], p.after[3]);
            break;
        }
        case Op::Arange: {
            const ArangeParams p = ArangeParams::load(node);
            g = ggml_arange(ctx, p.start, p.stop, p.step);
            break;
        }
        case Op::FlashAttnExt: {
            const FlashAttnParams p = FlashAttnParams::load(node);
            g = ggml_flash_attn_ext(ctx, a, b, c, s[3], p.scale, p.max_bias, p.softcap);
            if (s[4] != nullptr) ggml_flash_attn_ext_add_sinks(g, s[4]);
            // As llama.cpp builds it.
            ggml_prec_set_acc(g, GGML_PREC_F32);
            break;
        }
        case Op::MulMatId: g = ggml_mul_mat_id(ctx, a, b, c); break;
        case Op::Argsort:
            g = ggml_argsort(ctx, a, ArgsortParams::load(node).order == SortOrder::Ascending ? GGML_SORT_ORDER_ASC
                                                                                            : GGML_SORT_ORDER_DESC);
            break;
        case Op::AddId: g = ggml_add_id(ctx, a, b, c); break;
        case Op::SsmConv: g = ggml_ssm_conv(ctx, a, b); break;
        // One state snapshot: the final states, as xbackend's ops keep.
        case Op::SsmScan: g = ggml_ssm_scan(ctx, a, b, c, s[3], s[4], s[5], s[6], 1); break;
        case Op::GatedDeltaNet: g = ggml_gated_delta_net(ctx, a, b, c, s[3], s[4], s[5], 1); break;
        case Op::None:
        case Op::Reshape:
        case Op::View:
        case Op::Permute:
        case Op::Transpose: return refused(node, "computes nothing");
    }
    if (g == nullptr) return refused(node, "no ggml counterpart");
    // ggml's result must be the tensor xbackend states, byte for byte.
    bool same = g->type == *out_type;
    for (size_t i = 0; i < kMaxDims; ++i) same = same && g->ne[i] == node.ne[i] && g->nb[i] == node.nb[i];
    if (!same) {
        return refused(node, std::string("ggml's ") + ggml_op_desc(g) + " gives a " + ggml_type_name(g->type) + " [" +
                                 std::to_string(g->ne[0]) + ", " + std::to_string(g->ne[1]) + ", " +
                                 std::to_string(g->ne[2]) + ", " + std::to_string(g->ne[3]) + "] with other strides");
    }
    ggml_set_name(g, node.name.c_str());
    XB_RETURN_IF_ERROR(place(node, g));
    return g;
}

Status GraphTranslation::translate(const Graph& graph) {
    size_t n_tensors = 0;
    for (const Tensor* node : graph.nodes()) n_tensors += tensors_needed(*node);
    XB_RETURN_IF_ERROR(make_context(n_tensors, true));
    in_graph_.insert(graph.nodes().begin(), graph.nodes().end());
    for (const Tensor* node : graph.nodes()) {
        if (computes_nothing(*node)) continue;
        XB_ASSIGN_OR_RETURN(ggml_tensor * g, tensor_of(*node));
        ggml_build_forward_expand(graph_, g);
    }
    return Status::ok();
}

Result<ggml_tensor*> GraphTranslation::translate_node(const Tensor& node) {
    // The node and its sources, no graph: supports_op asks this for every node the scheduler places.
    XB_RETURN_IF_ERROR(make_context(tensors_needed(node), false));
    in_graph_.insert(&node);
    return tensor_of(node);
}

}  // namespace xb::ggml_devices
