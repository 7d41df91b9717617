#include "sched/error_budget.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "backend/tensor_io.hpp"
#include "core/op_params.hpp"
#include "core/quant.hpp"
#include "core/tensor_values.hpp"
#include "sched/graph_copy.hpp"

namespace xb {

namespace {

// One rounding to `type`: u^2/3 for a float type, the format's own error for a quantized one.
double rounding(DType type) {
    if (is_quantized(type)) return quantization_nmse_bound(type);
    const double u = unit_roundoff(type);
    return u * u / 3.0;
}

// The rounding of a product's activations to its weights' precision (see own_error).
double operand_rounding(DType weights) {
    if (is_quantized(weights)) return quantization_nmse_bound(DType::Q8_0);
    return weights == DType::F32 ? 0.0 : rounding(weights);
}

// Terms summed into each element of the result, for the ops that sum rows.
int64_t summed_terms(const Tensor& node) {
    const Tensor* a = node.src[0];
    if (a == nullptr) return 0;
    switch (node.op) {
        case Op::MulMat: return a->ne[0];
        case Op::OutProd: return a->ne[1];
        case Op::FlashAttnExt: return a->ne[0] + (node.src[1] != nullptr ? node.src[1]->ne[1] : 0);
        case Op::SoftMax: case Op::Norm: case Op::RmsNorm: case Op::L2Norm: case Op::SumRows: case Op::Mean: return a->ne[0];
        // The recurrences: each output sums a state's products, and the state has summed a term
        // per token before it.
        case Op::SsmConv: return node.src[1]->ne[0];
        case Op::SsmScan: return a->ne[0] + node.src[1]->ne[2];
        case Op::GatedDeltaNet: return 2 * node.src[2]->ne[0] + node.src[2]->ne[2];
        case Op::Sum: return a->nelements();
        default: return 0;
    }
}

// Roundings one element of the result goes through, beyond the sums.
int roundings(Op op) {
    switch (op) {
        case Op::Sqrt: case Op::Log: case Op::Unary: case Op::Glu: case Op::Rope: case Op::SoftMax:
        case Op::Norm: case Op::RmsNorm: case Op::L2Norm: case Op::FlashAttnExt: case Op::SsmScan: case Op::GatedDeltaNet:
            return 4;
        default:
            return 1;
    }
}

bool moves_data(Op op) {
    switch (op) {
        case Op::Dup: case Op::Repeat: case Op::Concat: case Op::GetRows: case Op::SetRows: case Op::Cpy:
        case Op::Cont: case Op::Pad: case Op::DiagMaskInf:
            return true;
        default:
            return op_is_view(op);
    }
}

// NMSE of `got` against `want`, in double; pairs that are equal (the same infinity, both NaN) add
// nothing; a pair that differs in finiteness counts as an error of the reference's magnitude.
double nmse(const std::vector<float>& got, const std::vector<float>& want) {
    double err = 0.0, norm = 0.0;
    for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
        const double a = got[i], b = want[i];
        if (a == b || (std::isnan(a) && std::isnan(b))) {
            if (std::isfinite(b)) norm += b * b;
            continue;
        }
        if (!std::isfinite(a) || !std::isfinite(b)) return std::numeric_limits<double>::infinity();
        err += (a - b) * (a - b);
        norm += b * b;
    }
    return norm > 0.0 ? err / norm : err;
}

// Scales every element of `node` (on any backend) by 1 + N(0, variance).
Status perturb(Tensor& node, double variance, std::mt19937_64& rng) {
    std::vector<std::byte> bytes(node.nbytes());
    XB_RETURN_IF_ERROR(tensor_get(node, bytes.data(), 0, bytes.size()));
    Tensor host;  // the same layout over a host copy of its bytes
    host.type = node.type;
    host.ne = node.ne;
    host.nb = node.nb;
    host.data = bytes.data();
    std::normal_distribution<float> noise(0.0f, static_cast<float>(std::sqrt(variance)));
    rewrite_values(host, [&](int64_t, float v) { return v * (1.0f + noise(rng)); });
    return tensor_set(node, bytes.data(), 0, bytes.size());
}

}  // namespace

double unit_roundoff(DType type) {
    switch (type) {
        case DType::F32: return std::ldexp(1.0, -24);
        case DType::F16: return std::ldexp(1.0, -11);
        case DType::BF16: return std::ldexp(1.0, -8);
        default: return 0.0;
    }
}

double own_error(const Tensor& node) {
    if (!is_float_type(node.type) && !is_quantized(node.type)) return 0.0;  // integers: exact
    const Tensor* a = node.src[0];
    if (moves_data(node.op)) {
        // Exact, unless the values are converted into a coarser type on the way.
        const bool converts = a != nullptr && a->type != node.type && node.type != DType::F32;
        return converts ? rounding(node.type) : 0.0;
    }
    const double u32 = unit_roundoff(DType::F32);
    double e = static_cast<double>(roundings(node.op)) * rounding(node.type) +
               static_cast<double>(summed_terms(node)) * u32 * u32 / 3.0;
    if ((node.op == Op::MulMat || node.op == Op::OutProd) && a != nullptr) e += operand_rounding(a->type);
    if (node.op == Op::FlashAttnExt && node.src[1] != nullptr) e += operand_rounding(node.src[1]->type);
    return e + gelu_table_error(node);
}

double gelu_table_error(const Tensor& node) {
    bool gelu = false;
    if (node.op == Op::Unary) {
        const UnaryOp op = UnaryParams::load(node).op;
        gelu = op == UnaryOp::Gelu || op == UnaryOp::GeluQuick;
    } else if (node.op == Op::Glu) {
        gelu = GluParams::load(node).op == GluOp::GeGlu;
    }
    return gelu ? 2.0 * rounding(DType::F16) : 0.0;
}

Result<ErrorBudget> propagate_own_error(Backend& backend, const Graph& graph, int draws, uint64_t seed,
                                        std::span<const LeafBytes> start) {
    const auto n = static_cast<size_t>(graph.n_nodes());
    ErrorBudget budget;
    budget.own.assign(n, 0.0);
    budget.propagated.assign(n, 0.0);
    budget.draws = std::max(draws, 1);
    for (size_t i = 0; i < n; ++i) {
        if (!op_is_view(graph.nodes()[i]->op)) budget.own[i] = own_error(*graph.nodes()[i]);
    }
    XB_ASSIGN_OR_RETURN(GraphCopy copy, graph_copy(backend, graph, {.share_read_only_leafs = true}));
    std::mt19937_64 rng(seed);
    for (int draw = 0; draw < budget.draws; ++draw) {
        // The leafs the graph writes (a KV cache, a recurrent state) as the graph started: a run
        // overwrites them. The copy already holds the graph's own before the first run.
        for (int i = 0; i < graph.n_leafs(); ++i) {
            const Tensor& original = *graph.leafs()[static_cast<size_t>(i)];
            Tensor& mine = *copy.graph.leafs()[static_cast<size_t>(i)];
            if (&mine == &original || mine.is_view()) continue;
            const auto given = std::find_if(start.begin(), start.end(), [&](const LeafBytes& b) { return b.leaf == &original; });
            if (given != start.end()) {
                XB_RETURN_IF_ERROR(tensor_set(mine, given->bytes.data(), 0, given->bytes.size()));
            } else if (draw > 0) {
                XB_RETURN_IF_ERROR(tensor_copy(original, mine));
            }
        }
        for (int i = 0; i < graph.n_nodes(); ++i) {
            XB_RETURN_IF_ERROR(backend.graph_compute(copy.graph.view(i, i + 1)));
            Tensor& mine = *copy.graph.node(i);
            if (op_is_view(mine.op)) continue;
            const double own = budget.own[static_cast<size_t>(i)];
            if (own > 0.0) XB_RETURN_IF_ERROR(perturb(mine, own, rng));
            XB_ASSIGN_OR_RETURN(std::vector<float> got, tensor_get_f32(mine));
            XB_ASSIGN_OR_RETURN(std::vector<float> want, tensor_get_f32(*graph.node(i)));
            budget.propagated[static_cast<size_t>(i)] += nmse(got, want) / budget.draws;
        }
    }
    return budget;
}

}  // namespace xb
