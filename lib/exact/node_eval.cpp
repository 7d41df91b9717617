#include "exact/node_eval.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/op_params.hpp"
#include "exact/ops.hpp"

namespace xb::exact {

namespace {

Status index_out_of_range(const Tensor& node, const char* what, double index, int64_t n) {
    return Status(StatusCode::OutOfRange, std::string(op_name(node.op)) + " '" + node.display_name() + "': " + what +
                                              " " + std::to_string(static_cast<int64_t>(index)) +
                                              " out of range [0, " + std::to_string(n) + ")");
}

// Every value of `indices` lies in [0, n).
Status check_indices(const Tensor& node, const RefArray& indices, int64_t n, const char* what) {
    for (double v : indices.values()) {
        if (!(v >= 0.0 && v < static_cast<double>(n))) return index_out_of_range(node, what, v, n);
    }
    return Status::ok();
}

Shape shape_of(const Tensor& t) { return {t.ne[0], t.ne[1], t.ne[2], t.ne[3]}; }

// The node's operands, each read whole at most once, when first asked for.
class Operands {
public:
    explicit Operands(std::span<const RowSource* const> srcs) : srcs_(srcs) {}

    bool has(int j) const { return static_cast<size_t>(j) < srcs_.size() && srcs_[static_cast<size_t>(j)] != nullptr; }
    const RowSource& rows(int j) const { return *srcs_[static_cast<size_t>(j)]; }
    const RefArray& dense(int j) {
        const auto i = static_cast<size_t>(j);
        if (dense_[i] == nullptr) dense_[i] = &as_dense(rows(j), storage_[i]);
        return *dense_[i];
    }
    const RefArray* optional(int j) { return has(j) ? &dense(j) : nullptr; }

private:
    std::span<const RowSource* const> srcs_;
    std::array<const RefArray*, kMaxSrc> dense_{};
    std::array<RefArray, kMaxSrc> storage_{};
};

double apply_binary(Op op, double x, double y) {
    switch (op) {
        case Op::Add: return x + y;
        case Op::Sub: return x - y;
        case Op::Mul: return x * y;
        default: return x / y;
    }
}

RefArray glu_node(const Tensor& node, Operands& in) {
    const GluParams p = GluParams::load(node);
    if (!in.has(1)) return glu(in.dense(0), p.op, p.swapped);
    if (p.op == GluOp::SwiGluOai) return swiglu_oai(in.dense(0), in.dense(1), p.alpha, p.limit);
    return glu_split(in.dense(0), in.dense(1), p.op);
}

// src's rows, each to the row of the destination its index names (set_rows_target).
Result<NodeValues> set_rows_node(const Tensor& node, Operands& in) {
    const RefArray& src = in.dense(0);
    const RefArray& indices = in.dense(1);
    XB_RETURN_IF_ERROR(check_indices(node, indices, node.ne[1], "row index"));
    NodeValues out{src, {}};
    for_each_index({1, src.ne()[1], src.ne()[2], src.ne()[3]}, [&](int64_t, int64_t j, int64_t i2, int64_t i3) {
        out.rows.push_back({set_rows_target(indices, j, i2, i3), i2, i3});
    });
    return out;
}

// The ops whose result is the node's whole array.
Result<RefArray> evaluate_values(const Tensor& node, Operands& in) {
    switch (node.op) {
        case Op::Dup: case Op::Cont: case Op::Cpy: return reshape(in.dense(0), shape_of(node));
        case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: {
            const Op op = node.op;
            return binary(in.dense(0), in.dense(1), [op](double x, double y) { return apply_binary(op, x, y); });
        }
        case Op::Add1: {
            const double s = in.dense(1)[0];
            return map(in.dense(0), [s](double x) { return x + s; });
        }
        case Op::Scale: {
            const ScaleParams p = ScaleParams::load(node);
            return map(in.dense(0), [p](double x) { return x * p.scale + p.bias; });
        }
        case Op::Sqr: return map(in.dense(0), [](double x) { return x * x; });
        case Op::Sqrt: return map(in.dense(0), [](double x) { return std::sqrt(x); });
        case Op::Log: return map(in.dense(0), [](double x) { return std::log(x); });
        case Op::Clamp: {
            const ClampParams p = ClampParams::load(node);
            return map(in.dense(0), [p](double x) { return std::clamp<double>(x, p.min, p.max); });
        }
        case Op::Unary: {
            const UnaryOp op = UnaryParams::load(node).op;
            return map(in.dense(0), [op](double x) { return unary(op, x); });
        }
        case Op::Glu: return glu_node(node, in);
        case Op::Sum: return sum(in.dense(0));
        case Op::SumRows: return sum_rows(in.dense(0));
        case Op::Mean: return mean(in.dense(0));
        case Op::Argmax: return argmax(in.dense(0));
        case Op::Repeat: return repeat(in.dense(0), shape_of(node));
        case Op::Concat: return concat(in.dense(0), in.dense(1), ConcatParams::load(node).dim);
        case Op::Norm: return norm(in.dense(0), NormParams::load(node).eps);
        case Op::RmsNorm: return rms_norm(in.dense(0), NormParams::load(node).eps);
        case Op::L2Norm: return l2_norm(in.dense(0), NormParams::load(node).eps);
        case Op::SoftMax: {
            const SoftMaxParams p = SoftMaxParams::load(node);
            return soft_max(in.dense(0), in.optional(1), p.scale, p.max_bias, in.optional(2));
        }
        case Op::DiagMaskInf: return diag_mask_inf(in.dense(0), DiagMaskInfParams::load(node).n_past);
        case Op::Rope: return rope(in.dense(0), in.dense(1), RopeParams::load(node), in.optional(2));
        case Op::MulMat: return mul_mat(in.rows(0), in.rows(1));
        case Op::OutProd: return out_prod(in.dense(0), in.dense(1));
        case Op::GetRows: {
            XB_RETURN_IF_ERROR(check_indices(node, in.dense(1), in.rows(0).ne()[1], "row index"));
            return get_rows(in.rows(0), in.dense(1));
        }
        case Op::Pad: {
            const PadParams p = PadParams::load(node);
            return pad(in.dense(0), {p.after[0], p.after[1], p.after[2], p.after[3]});
        }
        case Op::Arange: {
            const ArangeParams p = ArangeParams::load(node);
            return arange(p.start, p.stop, p.step);
        }
        case Op::FlashAttnExt: {
            const FlashAttnParams p = FlashAttnParams::load(node);
            return flash_attn_ext(in.dense(0), in.dense(1), in.dense(2), in.optional(3), p.scale, p.max_bias, p.softcap,
                                  in.optional(4));
        }
        case Op::MulMatId: {
            XB_RETURN_IF_ERROR(check_indices(node, in.dense(2), in.rows(0).ne()[2], "expert id"));
            return mul_mat_id(in.rows(0), in.rows(1), in.dense(2));
        }
        case Op::Argsort: return argsort(in.dense(0), ArgsortParams::load(node).order);
        case Op::AddId: {
            XB_RETURN_IF_ERROR(check_indices(node, in.dense(2), in.dense(1).ne()[1], "expert id"));
            return add_id(in.dense(0), in.dense(1), in.dense(2));
        }
        case Op::SsmConv: return ssm_conv(in.dense(0), in.dense(1));
        case Op::SsmScan: {
            XB_RETURN_IF_ERROR(check_indices(node, in.dense(6), in.dense(0).ne()[3], "state id"));
            return ssm_scan(in.dense(0), in.dense(1), in.dense(2), in.dense(3), in.dense(4), in.dense(5), in.dense(6));
        }
        case Op::GatedDeltaNet:
            return gated_delta_net(in.dense(0), in.dense(1), in.dense(2), in.dense(3), in.dense(4), in.dense(5));
        default: break;
    }
    return Status(StatusCode::InvalidArgument, std::string("exact: node '") + node.display_name() + "' (" +
                                                   op_name(node.op) + ") computes nothing");
}

}  // namespace

Result<NodeValues> evaluate_node(const Tensor& node, std::span<const RowSource* const> srcs) {
    Operands in(srcs);
    if (node.op == Op::SetRows) return set_rows_node(node, in);
    XB_ASSIGN_OR_RETURN(RefArray values, evaluate_values(node, in));
    // An op whose shape rule the builders and this file disagree on would write the wrong elements.
    XB_CHECK_MSG(values.ne() == shape_of(node), "exact: an op's result has another shape than its node");
    return NodeValues{std::move(values), {}};
}

}  // namespace xb::exact
