#include "dot.hpp"

#include <fstream>
#include <map>

namespace xb::tools {

namespace {
const char* kColours[] = {"#8dd3c7", "#fdb462", "#bebada", "#fb8072", "#80b1d3", "#b3de69", "#fccde5", "#d9d9d9"};

std::string id_of(const Tensor* t) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "t%p", static_cast<const void*>(t));
    return buf;
}
}  // namespace

Status write_dot(const Graph& graph, Scheduler& sched, const std::string& path) {
    std::ofstream out(path);
    if (!out) return Status(StatusCode::NotFound, "--dot: cannot write " + path);
    std::map<const Backend*, const char*> colour;
    for (int b = 0; b < sched.n_backends(); ++b) colour[&sched.backend(b)] = kColours[b % 8];
    out << "digraph xbackend {\n  rankdir=TB;\n  node [shape=box, style=filled, fontname=\"monospace\"];\n";
    out << "  subgraph cluster_legend { label=\"backends\";";
    for (int b = 0; b < sched.n_backends(); ++b) {
        out << " legend" << b << " [label=\"" << sched.backend(b).name() << "\", fillcolor=\"" << kColours[b % 8] << "\"];";
    }
    out << " }\n";
    for (const Tensor* leaf : graph.leafs()) {
        out << "  " << id_of(leaf) << " [label=\"" << leaf->display_name() << "\", shape=plaintext, style=\"\"];\n";
    }
    for (const Tensor* node : graph.nodes()) {
        const Backend* b = sched.tensor_backend(*node);
        out << "  " << id_of(node) << " [label=\"" << node->display_name() << "\\n" << node->op_label() << " "
            << node->shape_string() << "\", fillcolor=\"" << (b ? colour[b] : "white") << "\"];\n";
        for (const Tensor* src : node->src) {
            if (src == nullptr) continue;
            const Backend* sb = sched.tensor_backend(*src);
            const bool crosses = sb != nullptr && b != nullptr && sb != b && src->op != Op::None;
            out << "  " << id_of(src) << " -> " << id_of(node) << (crosses ? " [penwidth=3]" : "") << ";\n";
        }
    }
    out << "}\n";
    return out ? Status::ok() : Status(StatusCode::Internal, "--dot: error while writing " + path);
}

}  // namespace xb::tools
