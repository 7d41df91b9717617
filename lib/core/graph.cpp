#include "core/graph.hpp"

#include <algorithm>
#include <sstream>

#include "core/context.hpp"

namespace xb {

Result<Graph> Graph::build(std::span<Tensor* const> outputs) {
    Graph g;
    for (Tensor* t : outputs) XB_RETURN_IF_ERROR(g.expand(t));
    return g;
}

Status Graph::expand(Tensor* output) {
    if (output == nullptr) return Status(StatusCode::InvalidArgument, "graph: output tensor is null");
    if (!indexed_) return Status(StatusCode::InvalidArgument, "graph: a view of a graph cannot be expanded");
    return visit(output);
}

Status Graph::visit(Tensor* root) {
    // Iterative depth-first search: deep graphs (long chains of layers) must not overflow the stack.
    struct Frame {
        Tensor* t;
        int next_src;
    };
    if (!visited_.insert(root, kOnStack).second) return Status::ok();
    std::vector<Frame> stack{{root, 0}};
    while (!stack.empty()) {
        Frame& f = stack.back();
        if (f.t->ctx != nullptr && !f.t->ctx->ok()) return f.t->ctx->status();
        if (f.next_src < kMaxSrc) {
            Tensor* s = f.t->src[f.next_src++];
            if (s != nullptr && visited_.insert(s, kOnStack).second) stack.push_back({s, 0});
            continue;
        }
        Tensor* t = f.t;
        stack.pop_back();
        if (t->op == Op::None && !t->is_param()) {
            emit_leaf(t);
        } else {
            // Its sources are emitted already (depth first): record where they are.
            if (has_src_refs()) {
                for (const Tensor* s : t->src) src_refs_.push_back(ref_of(s));
            }
            emit_node(t);
        }
    }
    return Status::ok();
}

Tensor* Graph::node(int i) const {
    const int n = n_nodes();
    if (i < 0) i += n;
    XB_CHECK_MSG(i >= 0 && i < n, "graph node index out of range");
    return nodes_[static_cast<size_t>(i)];
}

Graph Graph::view(int i0, int i1) const {
    Graph g;
    view_into(i0, i1, g);
    return g;
}

void Graph::view_into(int i0, int i1, Graph& out) const {
    XB_CHECK(0 <= i0 && i0 <= i1 && i1 <= n_nodes());
    out.clear();
    out.nodes_.assign(nodes_.begin() + i0, nodes_.begin() + i1);
    out.indexed_ = false;  // views are for computing; contains() scans them instead
}

Graph Graph::repeated(int times) const {
    XB_CHECK(times >= 1);
    Graph g;
    g.nodes_.reserve(nodes_.size() * static_cast<size_t>(times));
    for (int i = 0; i < times; ++i) g.nodes_.insert(g.nodes_.end(), nodes_.begin(), nodes_.end());
    g.indexed_ = false;
    return g;
}

GraphRef Graph::ref_by_scan(const Tensor* t) const {
    const auto n = std::find(nodes_.begin(), nodes_.end(), t);
    if (n != nodes_.end()) return GraphRef::node(static_cast<int>(n - nodes_.begin()));
    const auto l = std::find(leafs_.begin(), leafs_.end(), t);
    if (l != leafs_.end()) return GraphRef::leaf(static_cast<int>(l - leafs_.begin()));
    return GraphRef::outside();
}

GraphRef Graph::next_node_ref() const {
    XB_CHECK_MSG(n_nodes() < GraphRef::kMaxIndex, "a graph of more than 2^30 nodes");
    return GraphRef::node(n_nodes());
}

GraphRef Graph::next_leaf_ref() const {
    XB_CHECK_MSG(n_leafs() < GraphRef::kMaxIndex, "a graph of more than 2^30 leafs");
    return GraphRef::leaf(n_leafs());
}

void Graph::emit_node(Tensor* t) {
    visited_.set(t, encode(next_node_ref()));
    nodes_.push_back(t);
}

void Graph::emit_leaf(Tensor* t) {
    visited_.set(t, encode(next_leaf_ref()));
    leafs_.push_back(t);
}

void Graph::add_node(Tensor* t) {
    XB_CHECK(t != nullptr);
    XB_CHECK_MSG(indexed_, "nodes cannot be added to a graph view");
    // One probe: the entry is claimed with the code the node gets, or found.
    if (visited_.insert(t, encode(next_node_ref())).second) {
        src_refs_.clear();  // rewritten graphs do not keep source refs (see has_src_refs)
        nodes_.push_back(t);
    }
}

void Graph::add_leaf(Tensor* t) {
    XB_CHECK(t != nullptr);
    XB_CHECK_MSG(indexed_, "leafs cannot be added to a graph view");
    if (visited_.insert(t, encode(next_leaf_ref())).second) leafs_.push_back(t);
}

void Graph::clear() {
    nodes_.clear();
    leafs_.clear();
    src_refs_.clear();
    visited_.clear();
    indexed_ = true;
}

std::string Graph::to_string() const {
    std::ostringstream os;
    auto flags = [](const Tensor& t) {
        std::string f;
        if (t.is_input()) f += 'I';
        if (t.is_output()) f += 'O';
        if (t.is_param()) f += 'P';
        return f.empty() ? std::string("-") : f;
    };
    os << "graph: " << n_nodes() << " nodes, " << n_leafs() << " leafs\n";
    for (int i = 0; i < n_nodes(); ++i) {
        const Tensor& t = *nodes_[static_cast<size_t>(i)];
        os << "  node " << i << ": " << t.op_label() << ' ' << t.shape_string() << ' ' << flags(t) << ' '
           << (t.name.empty() ? "-" : t.name) << '\n';
    }
    for (int i = 0; i < n_leafs(); ++i) {
        const Tensor& t = *leafs_[static_cast<size_t>(i)];
        os << "  leaf " << i << ": " << t.shape_string() << ' ' << flags(t) << ' ' << (t.name.empty() ? "-" : t.name)
           << '\n';
    }
    return os.str();
}

void Graph::print(std::FILE* out) const { std::fputs(to_string().c_str(), out); }

}  // namespace xb
