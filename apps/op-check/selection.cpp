#include "selection.hpp"

#include <algorithm>

#include "backend/registry.hpp"
#include "builtin/builtin_backends.hpp"
#include "core/op.hpp"
#include "name_pattern.hpp"
#include "opcheck/case_graph.hpp"

namespace xb::tools::opcheck {

namespace {

using xb::opcheck::CaseGraph;
using xb::opcheck::OpCase;

bool known_op(const std::string& name) {
    return op_from_name(name).has_value() || unary_op_from_name(name).has_value() ||
           glu_op_from_name(name).has_value();
}

Status check_op_names(const std::vector<std::string>& ops) {
    for (const std::string& name : ops) {
        if (!known_op(name)) {
            return Status(StatusCode::InvalidArgument, "--op " + name +
                                                           ": unknown op (use op names such as add, mul_mat, rope, "
                                                           "unary, or activations such as silu, swiglu)");
        }
    }
    return Status::ok();
}

// --op add matches add; --op unary every activation; --op silu only unary(silu).
bool op_matches(const Tensor& node, const std::vector<std::string>& ops) {
    if (ops.empty()) return true;
    const std::string name = op_name(node.op);
    const std::string label = node.op_label();
    return std::any_of(ops.begin(), ops.end(), [&](const std::string& want) {
        return want == name || want == label || label == name + "(" + want + ")";
    });
}

// "f16,f32": the types of the node's sources in order (what a backend's supports_op looks at);
// the node's own type when it has no sources (arange).
std::string type_key(const Tensor& node) {
    std::string key;
    for (const Tensor* s : node.src) {
        if (s != nullptr) key += (key.empty() ? "" : ",") + std::string(dtype_name(s->type));
    }
    return key.empty() ? dtype_name(node.type) : key;
}

}  // namespace

Result<std::vector<SelectedCase>> select_cases(const std::vector<OpCase>& set, const OpCheckOptions& o) {
    XB_RETURN_IF_ERROR(check_op_names(o.ops));
    XB_ASSIGN_OR_RETURN(NamePattern pattern, NamePattern::parse(o.pattern.empty() ? "*" : o.pattern));
    std::vector<SelectedCase> selected;
    for (const OpCase& c : set) {
        if (!pattern.matches(c.name)) continue;
        XB_ASSIGN_OR_RETURN(CaseGraph graph, CaseGraph::build(c));
        const Tensor& out = graph.output();
        if (op_matches(out, o.ops)) selected.push_back({&c, out.op_label(), type_key(out)});
    }
    if (selected.empty()) {
        return Status(StatusCode::InvalidArgument, "no case matches the filters (see --list-cases for the names)");
    }
    return selected;
}

Result<std::vector<std::string>> pick_backends(const OpCheckOptions& o) {
    const Registry& reg = global_registry();
    const std::vector<std::string>& given = o.common.backends;
    if (!given.empty()) {
        for (auto it = given.begin(); it != given.end(); ++it) {
            const std::string& name = *it;
            // A backend named twice would be checked twice and counted as one in the summary.
            if (std::find(given.begin(), it, name) != it) {
                return Status(StatusCode::InvalidArgument, "-b " + name + ": named twice");
            }
            if (reg.dev_by_name(name) == nullptr) {
                return Status(StatusCode::NotFound,
                              "-b " + name + ": no such device; available: " + reg.device_names());
            }
        }
        return given;
    }
    std::vector<std::string> names;
    for (size_t i = 0; i < reg.dev_count(); ++i) {
        const Device& d = reg.dev(i);
        // The exact reference device is checked like any other, but timing it measures nothing a
        // user runs: perf mode takes it only when named.
        if (o.mode == "perf" && d.type() == DeviceType::Reference) continue;
        // ggml's devices are checked when named (-b ggml:CPU).
        if (d.is_foreign()) continue;
        if (o.mode == "support" || d.type() != DeviceType::CPU) names.emplace_back(d.name());
    }
    if (names.empty()) return Status(StatusCode::NotFound, "no device other than the CPU to check; give -b CPU");
    return names;
}

}  // namespace xb::tools::opcheck
