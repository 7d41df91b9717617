#include "sched/sched_dot.hpp"

#include <map>
#include <vector>

namespace xb {

namespace {

class DotWriter {
public:
    DotWriter(Scheduler& sched, std::ostream& out) : sched_(sched), out_(out) {
        for (int b = 0; b < sched.n_backends(); ++b) colour_[&sched.backend(b)] = dot_backend_colour(b);
    }

    void write(const Graph& graph) {
        out_ << "digraph xbackend {\n  rankdir=TB;\n  node [shape=box, style=filled, fontname=\"monospace\"];\n";
        write_dot_legend(sched_, out_);
        for (size_t i = 0; i < graph.leafs().size(); ++i) {
            declare(graph.leafs()[i], "l" + std::to_string(i), "shape=plaintext, style=\"\"");
        }
        // Ids before edges: a node may read a later-listed tensor only through a copy, but keep
        // the writer independent of that.
        for (size_t i = 0; i < graph.nodes().size(); ++i) ids_[graph.nodes()[i]] = "n" + std::to_string(i);
        write_splits(graph);
        write_copies();
        for (const Tensor* node : graph.nodes()) write_edges(*node);
        out_ << "}\n";
    }

private:
    const char* colour_of(const Backend* b) const {
        auto it = colour_.find(b);
        return it == colour_.end() ? "white" : it->second;
    }

    void declare(const Tensor* t, const std::string& id, const std::string& attributes) {
        ids_[t] = id;
        out_ << "  " << id << " [label=" << dot_quoted(t->display_name()) << ", " << attributes << "];\n";
    }

    // The id of a source; one not in the graph (a view's storage, say) is declared on first use.
    const std::string& id_of(const Tensor* t) {
        auto it = ids_.find(t);
        if (it != ids_.end()) return it->second;
        declare(t, "x" + std::to_string(n_other_++), "shape=plaintext, style=\"\"");
        return ids_[t];
    }

    // Each copy once, on its consumer's backend, with a bold edge from the tensor it copies.
    void write_copies() {
        int n = 0;
        for (const Scheduler::SourceRewrite& r : sched_.source_rewrites()) {
            const Tensor* copy = r.node->src[static_cast<size_t>(r.slot)];
            if (ids_.count(copy)) continue;
            const char* colour = colour_of(sched_.tensor_backend(*r.node));
            declare(copy, "c" + std::to_string(n++), std::string("style=\"filled,dashed\", fillcolor=\"") + colour + "\"");
            const std::string& from = id_of(r.original);
            out_ << "  " << from << " -> " << ids_[copy] << " [penwidth=3, color=\"" << colour << "\"];\n";
        }
    }

    // One cluster per split, outlined in its backend's colour, holding the split's nodes in order;
    // nodes outside every split (none after a split_graph) follow on their own.
    void write_splits(const Graph& graph) {
        std::vector<bool> declared(graph.nodes().size(), false);
        const std::vector<SplitReport>& splits = sched_.report().splits;
        for (size_t k = 0; k < splits.size(); ++k) {
            const SplitReport& split = splits[k];
            const Backend* backend = split.node_begin < split.node_end
                                         ? sched_.tensor_backend(*graph.nodes()[static_cast<size_t>(split.node_begin)])
                                         : nullptr;
            out_ << "  subgraph cluster_split" << k << " {\n    label="
                 << dot_quoted("split " + std::to_string(k) + ": " + split.backend) << ";\n    color=\""
                 << colour_of(backend) << "\";\n    penwidth=2;\n";
            for (int i = split.node_begin; i < split.node_end && i < graph.n_nodes(); ++i) {
                out_ << "  ";
                declare_node(*graph.nodes()[static_cast<size_t>(i)]);
                declared[static_cast<size_t>(i)] = true;
            }
            out_ << "  }\n";
        }
        for (size_t i = 0; i < graph.nodes().size(); ++i) {
            if (!declared[i]) declare_node(*graph.nodes()[i]);
        }
    }

    void declare_node(const Tensor& node) {
        out_ << "  " << ids_[&node] << " [label=" << dot_quoted(node.display_name() + "\n" + node.op_label() + " " + node.shape_string())
             << ", fillcolor=\"" << colour_of(sched_.tensor_backend(node)) << "\"];\n";
    }

    void write_edges(const Tensor& node) {
        const Backend* backend = sched_.tensor_backend(node);
        for (const Tensor* src : node.src) {
            if (src == nullptr) continue;
            const Backend* from = sched_.tensor_backend(*src);
            const bool crosses = from != nullptr && backend != nullptr && from != backend && src->op != Op::None;
            const std::string& src_id = id_of(src);
            out_ << "  " << src_id << " -> " << ids_[&node];
            if (crosses) out_ << " [penwidth=3, color=\"" << colour_of(backend) << "\"]";
            out_ << ";\n";
        }
    }

    Scheduler& sched_;
    std::ostream& out_;
    std::map<const Backend*, const char*> colour_;
    std::map<const Tensor*, std::string> ids_;
    int n_other_ = 0;
};

}  // namespace

std::string dot_quoted(std::string_view text) {
    std::string q = "\"";
    for (const char c : text) {
        if (c == '"' || c == '\\') {
            q += '\\';
            q += c;
        } else if (c == '\n') {
            q += "\\n";  // a line break inside a label
        } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
            q += ' ';
        } else {
            q += c;
        }
    }
    return q + '"';
}

const char* dot_backend_colour(int index) {
    constexpr const char* kColours[] = {"#8dd3c7", "#fdb462", "#bebada", "#fb8072",
                                        "#80b1d3", "#b3de69", "#fccde5", "#d9d9d9"};
    constexpr int kNumColours = sizeof kColours / sizeof kColours[0];
    return kColours[(index % kNumColours + kNumColours) % kNumColours];
}

void write_dot_legend(Scheduler& sched, std::ostream& out) {
    out << "  subgraph cluster_legend {\n    label=\"backends\";\n";
    for (int b = 0; b < sched.n_backends(); ++b) {
        out << "    legend" << b << " [label=" << dot_quoted(sched.backend(b).name()) << ", fillcolor=\""
            << dot_backend_colour(b) << "\"];\n";
    }
    out << "  }\n";
}

std::optional<DotLevel> dot_level_from_name(std::string_view name) {
    if (name == "split") return DotLevel::Split;
    if (name == "layer") return DotLevel::Layer;
    if (name == "node") return DotLevel::Node;
    return std::nullopt;
}

void write_dot(const Graph& graph, Scheduler& sched, std::ostream& out, DotLevel level) {
    if (level == DotLevel::Node) {
        DotWriter(sched, out).write(graph);
        return;
    }
    write_dot_groups(graph, sched, out, level);
}

}  // namespace xb
