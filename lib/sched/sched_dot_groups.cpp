// The collapsed DOT views (sched_dot.hpp): a box per split, or per layer of each split, labelled
// with what it holds, and one edge per pair of boxes that a tensor crosses, labelled with the bytes
// that cross it. A model of any depth stays a picture people can read.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "backend/buffer.hpp"
#include "core/size_math.hpp"
#include "sched/sched_dot.hpp"

namespace xb {

namespace {

constexpr int kNoLayer = -1;     // a named node outside the layers (inp_embd, result_output)
constexpr int kUnnamed = -2;     // a node without a name: it goes with the node before it

// The layer of a node named as llama.cpp names them: the number after the last '-' that a digit
// follows ("attn_norm-3", "Kcur-3 (view)"); kNoLayer for other names, kUnnamed for none.
int layer_of(const std::string& name) {
    if (name.empty()) return kUnnamed;
    for (size_t dash = name.rfind('-'); dash != std::string::npos; dash = dash == 0 ? std::string::npos : name.rfind('-', dash - 1)) {
        int layer = 0;
        size_t i = dash + 1;
        for (; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])) != 0 && layer < 1000000; ++i) {
            layer = layer * 10 + (name[i] - '0');
        }
        if (i > dash + 1) return layer;
    }
    return kNoLayer;
}

// "layers 0-7", "layer 3", "" for none: the layers a set of nodes belongs to.
std::string layers_text(const std::set<int>& layers) {
    std::set<int> numbered;
    for (int l : layers) {
        if (l >= 0) numbered.insert(l);
    }
    if (numbered.empty()) return "";
    if (numbered.size() == 1) return "layer " + std::to_string(*numbered.begin());
    return "layers " + std::to_string(*numbered.begin()) + "-" + std::to_string(*numbered.rbegin());
}

struct Group {
    int split = 0;
    int layer = -1;          // layer level only
    std::string backend;
    int n_nodes = 0;         // computing nodes
    std::set<int> layers;
    std::set<const Tensor*> weights;
    size_t weight_bytes = 0;
};

class GroupWriter {
public:
    GroupWriter(Scheduler& sched, std::ostream& out, DotLevel level) : sched_(sched), out_(out), level_(level) {
        for (int b = 0; b < sched.n_backends(); ++b) colour_[sched.backend(b).name()] = dot_backend_colour(b);
    }

    void write(const Graph& graph) {
        // A source the scheduler rewrote to a copy (of a split input) stands for the original.
        for (const Scheduler::SourceRewrite& r : sched_.source_rewrites()) {
            original_of_[r.node->src[static_cast<size_t>(r.slot)]] = r.original;
        }
        assign_groups(graph);
        out_ << "digraph xbackend {\n  rankdir=TB;\n  node [shape=box, style=filled, fontname=\"monospace\"];\n";
        write_dot_legend(sched_, out_);
        write_groups();
        write_edges(graph);
        out_ << "}\n";
    }

private:
    const Tensor* original(const Tensor* t) const {
        const auto it = original_of_.find(t);
        return it == original_of_.end() ? t : it->second;
    }

    // A leaf in a buffer of weights.
    static bool is_weight(const Tensor& t) {
        const Buffer* b = storage_buffer(t);
        return t.op == Op::None && b != nullptr && b->usage() == BufferUsage::Weights;
    }

    const char* colour_of(const std::string& backend) const {
        auto it = colour_.find(backend);
        return it == colour_.end() ? "white" : it->second;
    }

    // Node i's group: its split, or (split, layer) at the layer level, consecutive nodes of one
    // layer in one split making one group.
    void assign_groups(const Graph& graph) {
        const std::vector<SplitReport>& splits = sched_.report().splits;
        group_of_.assign(graph.nodes().size(), -1);
        for (size_t k = 0; k < splits.size(); ++k) {
            const SplitReport& split = splits[k];
            for (int i = split.node_begin; i < split.node_end && i < graph.n_nodes(); ++i) {
                const Tensor& node = *graph.node(i);
                int layer = level_ == DotLevel::Layer ? layer_of(node.name) : kNoLayer;
                if (layer == kUnnamed) layer = groups_.empty() ? kNoLayer : groups_.back().layer;
                if (groups_.empty() || groups_.back().split != static_cast<int>(k) || groups_.back().layer != layer) {
                    groups_.push_back({static_cast<int>(k), layer, split.backend, 0, {}, {}, 0});
                }
                Group& g = groups_.back();
                group_of_[static_cast<size_t>(i)] = static_cast<int>(groups_.size()) - 1;
                index_of_[&node] = i;
                if (!computes_nothing(node)) ++g.n_nodes;
                g.layers.insert(layer == kNoLayer ? layer_of(node.name) : layer);
                for (const Tensor* src : node.src) {
                    if (src != nullptr && is_weight(*original(src)) && g.weights.insert(original(src)).second) {
                        g.weight_bytes += src->nbytes();
                    }
                }
            }
        }
    }

    std::string label_of(const Group& g) const {
        std::string label = "split " + std::to_string(g.split) + ": " + g.backend;
        if (level_ == DotLevel::Layer) label = g.layer >= 0 ? "layer " + std::to_string(g.layer) : "outside the layers";
        label += "\n" + std::to_string(g.n_nodes) + (g.n_nodes == 1 ? " node" : " nodes");
        if (level_ == DotLevel::Split) {
            const std::string layers = layers_text(g.layers);
            if (!layers.empty()) label += ", " + layers;
        }
        if (!g.weights.empty()) {
            label += "\n" + std::to_string(g.weights.size()) + (g.weights.size() == 1 ? " weight, " : " weights, ") +
                     bytes_text(static_cast<double>(g.weight_bytes));
        }
        return label;
    }

    // Split level: a box per split. Layer level: a cluster per split, outlined in its backend's
    // colour, holding a box per layer.
    void write_groups() {
        int open_split = -1;
        for (size_t i = 0; i < groups_.size(); ++i) {
            const Group& g = groups_[i];
            if (level_ == DotLevel::Layer && g.split != open_split) {
                if (open_split >= 0) out_ << "  }\n";
                out_ << "  subgraph cluster_split" << g.split << " {\n    label="
                     << dot_quoted("split " + std::to_string(g.split) + ": " + g.backend) << ";\n    color=\""
                     << colour_of(g.backend) << "\";\n    penwidth=2;\n";
                open_split = g.split;
            }
            out_ << (open_split >= 0 ? "    " : "  ") << "g" << i << " [label=" << dot_quoted(label_of(g))
                 << ", fillcolor=\"" << colour_of(g.backend) << "\"];\n";
        }
        if (open_split >= 0) out_ << "  }\n";
    }

    // Bytes of each tensor produced in one group and read in another, counted once per pair of
    // groups; views count as their storage's producer.
    void write_edges(const Graph& graph) {
        std::map<std::pair<int, int>, size_t> bytes;
        std::set<std::pair<const Tensor*, int>> counted;
        for (int i = 0; i < graph.n_nodes(); ++i) {
            const int to = group_of_[static_cast<size_t>(i)];
            if (to < 0) continue;
            for (const Tensor* src : graph.node(i)->src) {
                if (src == nullptr) continue;
                const Tensor* producer = original(src);
                while (producer->view_src != nullptr && index_of_.find(producer) == index_of_.end()) producer = producer->view_src;
                const auto it = index_of_.find(producer);
                if (it == index_of_.end()) continue;
                const int from = group_of_[static_cast<size_t>(it->second)];
                if (from < 0 || from == to || !counted.insert({src, to}).second) continue;
                bytes[{from, to}] += src->nbytes();
            }
        }
        for (const auto& [pair, n] : bytes) {
            const Group& from = groups_[static_cast<size_t>(pair.first)];
            const Group& to = groups_[static_cast<size_t>(pair.second)];
            out_ << "  g" << pair.first << " -> g" << pair.second << " [label=" << dot_quoted(bytes_text(static_cast<double>(n)));
            if (from.backend != to.backend) out_ << ", penwidth=3, color=\"" << colour_of(to.backend) << "\"";
            out_ << "];\n";
        }
    }

    Scheduler& sched_;
    std::ostream& out_;
    DotLevel level_;
    std::map<std::string, const char*> colour_;
    std::vector<Group> groups_;
    std::vector<int> group_of_;                 // per node: its group (-1 outside every split)
    std::map<const Tensor*, int> index_of_;     // node -> index
    std::map<const Tensor*, const Tensor*> original_of_;  // a split input's copy -> the tensor copied
};

}  // namespace

void write_dot_groups(const Graph& graph, Scheduler& sched, std::ostream& out, DotLevel level) {
    GroupWriter(sched, out, level).write(graph);
}

}  // namespace xb
