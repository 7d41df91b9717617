#include "tolerances.hpp"

#include <algorithm>
#include <cstdlib>

#include "core/quant.hpp"
#include "sched/error_budget.hpp"
#include "core/message_text.hpp"

namespace xb::tools {

Tolerances::Tolerances() {
    // Element-wise math differs by a few ulps between correct implementations: 1e-7 NMSE is the
    // same default ggml's test-backend-ops uses. Products accumulate over long rows in any order
    // (and GPUs use fused or tensor-core paths, or round the activations to 8 bits for integer dot
    // products of quantized weights), so they get ggml's 5e-4; mul_mat_id is the same product per
    // expert.
    by_op_ = {{"default", 1e-7},
              {"mul_mat", 5e-4},
              {"mul_mat_id", 5e-4},
              {"out_prod", 5e-4},
              {"flash_attn_ext", 5e-4}};
}

Status Tolerances::set(const std::string& assignment) {
    const size_t eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0) {
        return Status(StatusCode::InvalidArgument, "--tol " + assignment + ": expected OP=VALUE, e.g. mul_mat=1e-3");
    }
    const std::string op = assignment.substr(0, eq);
    if (op != "default" && !op_from_name(op).has_value()) {
        return Status(StatusCode::InvalidArgument, "--tol " + assignment + ": unknown op " + quoted_name(op));
    }
    char* end = nullptr;
    const double v = std::strtod(assignment.c_str() + eq + 1, &end);
    if (end == assignment.c_str() + eq + 1 || *end != '\0' || !(v >= 0)) {
        return Status(StatusCode::InvalidArgument, "--tol " + assignment + ": the value must be a non-negative number");
    }
    by_op_[op] = v;
    given_.insert(op);
    return Status::ok();
}

double Tolerances::for_node(const Tensor& node) const {
    const auto it = by_op_.find(op_name(node.op));
    double op_tolerance = it != by_op_.end() ? it->second : by_op_.at("default");
    // GELU through ggml's f16 table (error_budget.hpp) is a correct computation: a few times its error
    // passes, unless --tol set the op's tolerance.
    if (given_.count(op_name(node.op)) == 0) op_tolerance = std::max(op_tolerance, 8.0 * gelu_table_error(node));
    // A node that quantizes (cpy/cast into q4_K, ...) rounds to its format's step: inputs that
    // differ by ulps can land a few elements one step apart, an error of the format's own size.
    return std::max(op_tolerance, quantization_nmse_bound(node.type));
}

}  // namespace xb::tools
