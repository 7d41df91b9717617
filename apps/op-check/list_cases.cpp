#include "list_cases.hpp"

#include <bit>

#include "core/op.hpp"
#include "opcheck/case_graph.hpp"

namespace xb::tools::opcheck {

namespace {

using nlohmann::ordered_json;

ordered_json shape_and_strides(const Tensor& t) {
    ordered_json j;
    j["type"] = dtype_name(t.type);
    j["ne"] = t.ne;
    j["nb"] = t.nb;
    return j;
}

// The node's parameter words up to the last non-zero one, read as integers and as floats (which
// reading is meaningful depends on the op: core/op_params.hpp).
void add_params(ordered_json& j, const Tensor& node) {
    size_t used = node.op_params.size();
    while (used > 0 && node.op_params[used - 1] == 0) --used;
    ordered_json words = ordered_json::array();
    ordered_json floats = ordered_json::array();
    for (size_t i = 0; i < used; ++i) {
        words.push_back(node.op_params[i]);
        floats.push_back(std::bit_cast<float>(node.op_params[i]));
    }
    j["params_i32"] = std::move(words);
    j["params_f32"] = std::move(floats);
}

ordered_json describe_node(const Tensor& node) {
    ordered_json j = shape_and_strides(node);
    j["op"] = op_name(node.op);
    const std::string label = node.op_label();
    const size_t open = label.find('(');
    if (open != std::string::npos) j["sub_op"] = label.substr(open + 1, label.size() - open - 2);
    add_params(j, node);
    ordered_json sources = ordered_json::array();
    for (const Tensor* s : node.src) {
        if (s != nullptr) sources.push_back(shape_and_strides(*s));
    }
    j["sources"] = std::move(sources);
    return j;
}

}  // namespace

int list_cases(const OpCheckOptions& o, const std::vector<SelectedCase>& cases) {
    report::Table t({"case", "op", "type", "tolerance"});
    ordered_json doc = ordered_json::array();
    for (const SelectedCase& c : cases) {
        t.add_row({c.source->name, c.op, c.type, c.source->tolerance});
        auto graph = xb::opcheck::CaseGraph::build(*c.source);
        if (!graph.is_ok()) return fail(kTool, graph.status());
        doc.push_back({{"case", c.source->name},
                       {"op", c.op},
                       {"type", c.type},
                       {"tolerance", c.source->tolerance},
                       {"node", describe_node(graph->output())}});
    }
    const Status s = write_report(t, doc, o.common);
    return s.is_ok() ? kExitOk : fail(kTool, s);
}

}  // namespace xb::tools::opcheck
