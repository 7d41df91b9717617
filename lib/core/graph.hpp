// Graph: the nodes (computed tensors) of a computation in topological order, and its leafs
// (weights, inputs, constants).
//
// Built by depth-first expansion from one or more outputs, visiting sources in order, so that
// every node comes after all of its sources. Storage grows as needed: there is no size cap.
#pragma once

#include <cstdio>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "core/pointer_map.hpp"
#include "core/status.hpp"
#include "core/tensor.hpp"

namespace xb {

class Graph;

// Where a tensor is in a graph: node i, leaf i, outside the graph, or absent (a null source).
// One 32-bit word (the kind in the top two bits, the index below): the allocator's plans hold ten
// per node and stream them on every alloc_graph.
class GraphRef {
public:
    enum class Kind : uint8_t { Absent, Outside, Node, Leaf };
    // Indices fit in the 30 bits below the kind (Graph checks as it grows).
    static constexpr int kMaxIndex = (1 << 30) - 1;

    constexpr GraphRef() : GraphRef(Kind::Absent, 0) {}

    static constexpr GraphRef absent() { return GraphRef(Kind::Absent, 0); }
    static constexpr GraphRef outside() { return GraphRef(Kind::Outside, 0); }
    static constexpr GraphRef node(int index) { return GraphRef(Kind::Node, index); }
    static constexpr GraphRef leaf(int index) { return GraphRef(Kind::Leaf, index); }

    Kind kind() const { return static_cast<Kind>(word_ >> 30); }
    bool is_node() const { return kind() == Kind::Node; }
    bool is_leaf() const { return kind() == Kind::Leaf; }
    bool in_graph() const { return is_node() || is_leaf(); }
    // The index in nodes() or leafs() (in_graph() only; -1 otherwise).
    int index() const { return in_graph() ? static_cast<int>(word_ & kMaxIndex) : -1; }
    // One index over nodes and leafs together, nodes first: [0, n_nodes + n_leafs). For vectors of
    // per-tensor state; valid while the graph does not change.
    size_t dense(const Graph& graph) const;

    bool operator==(const GraphRef&) const = default;

private:
    constexpr GraphRef(Kind kind, int index)
        : word_((static_cast<uint32_t>(kind) << 30) | (static_cast<uint32_t>(index) & kMaxIndex)) {}
    uint32_t word_;
};

class Graph {
public:
    Graph() = default;

    // A graph that computes `outputs`. Fails with the builders' sticky error when any tensor
    // reached was made by a context that recorded one.
    static Result<Graph> build(std::span<Tensor* const> outputs);
    static Result<Graph> build(std::initializer_list<Tensor*> outputs) {
        return build(std::span<Tensor* const>(outputs.begin(), outputs.size()));
    }

    // Adds `output` and everything it depends on that is not in the graph yet (build_forward_expand).
    Status expand(Tensor* output);

    const std::vector<Tensor*>& nodes() const { return nodes_; }
    const std::vector<Tensor*>& leafs() const { return leafs_; }
    int n_nodes() const { return static_cast<int>(nodes_.size()); }
    int n_leafs() const { return static_cast<int>(leafs_.size()); }
    // Node i; negative i counts from the end (-1 is the last node).
    Tensor* node(int i) const;
    bool contains(const Tensor* t) const { return ref_of(t).in_graph(); }
    // Where t is: a node, a leaf, outside the graph, or absent (t null). Constant time (a linear
    // scan on views, which are small). Inline: the scheduler's passes call it per source.
    GraphRef ref_of(const Tensor* t) const {
        if (t == nullptr) return GraphRef::absent();
        if (!indexed_) return ref_by_scan(t);
        const int32_t code = visited_.find(t);
        if (code < 0) return GraphRef::outside();  // absent, or reached by a build that failed
        return code % 2 == 0 ? GraphRef::node(code / 2) : GraphRef::leaf(code / 2);
    }
    // Nodes and leafs together: the range of GraphRef::dense.
    size_t n_tensors() const { return nodes_.size() + leafs_.size(); }

    // The nodes [i0, i1) without leafs, as ggml_graph_view; used to compute part of a graph.
    Graph view(int i0, int i1) const;
    // The same into `out`, reusing its storage.
    void view_into(int i0, int i1, Graph& out) const;
    // All nodes `times` times over, in order, as a view (for timing an op without the cost of
    // launching a graph, as ggml's test-backend-ops perf does).
    Graph repeated(int times) const;
    // Where node i's sources are (kMaxSrc refs, absent where a source is null), recorded as the
    // graph was built, so that passes over it can index per-tensor state without looking each
    // source up. Only while has_src_refs(): a graph made by build/expand, not added to by hand.
    bool has_src_refs() const { return indexed_ && src_refs_.size() == nodes_.size() * kMaxSrc; }
    std::span<const GraphRef, kMaxSrc> src_refs(int i) const {
        return std::span<const GraphRef, kMaxSrc>(src_refs_.data() + static_cast<size_t>(i) * kMaxSrc, kMaxSrc);
    }

    // Appends a node whose sources are already in the graph (for graph rewriting).
    void add_node(Tensor* t);
    // Appends a leaf (for graph rewriting).
    void add_leaf(Tensor* t);
    // Empties the graph, keeping its storage.
    void clear();

    // One line per node and leaf: index, op, shape, type, flags, name (ggml_graph_print).
    std::string to_string() const;
    void print(std::FILE* out = stdout) const;

private:
    Status visit(Tensor* t);
    GraphRef ref_by_scan(const Tensor* t) const;

    // A tensor's GraphRef as one word in visited_: node i is 2i, leaf i is 2i + 1, and kOnStack a
    // tensor the build has reached but not emitted yet.
    static constexpr int32_t kOnStack = -2;
    static int32_t encode(GraphRef r) { return 2 * r.index() + (r.is_leaf() ? 1 : 0); }
    // The ref the next node (leaf) takes; checks that its index fits.
    GraphRef next_node_ref() const;
    GraphRef next_leaf_ref() const;
    void emit_node(Tensor* t);
    void emit_leaf(Tensor* t);

    std::vector<Tensor*> nodes_;
    std::vector<Tensor*> leafs_;
    std::vector<GraphRef> src_refs_;  // [node][j], while every node came from visit()
    PointerMap visited_;  // every tensor reached, with its code (when indexed_)
    bool indexed_ = true; // false for views, which are never extended
};

inline size_t GraphRef::dense(const Graph& graph) const {
    XB_CHECK_MSG(in_graph(), "a dense index of a tensor outside the graph");
    const auto i = static_cast<size_t>(word_ & kMaxIndex);
    return is_node() ? i : graph.nodes().size() + i;
}

}  // namespace xb
