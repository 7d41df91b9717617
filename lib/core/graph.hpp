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
    bool contains(const Tensor* t) const;

    // The nodes [i0, i1) without leafs, as ggml_graph_view; used to compute part of a graph.
    Graph view(int i0, int i1) const;
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

    std::vector<Tensor*> nodes_;
    std::vector<Tensor*> leafs_;
    PointerMap visited_;  // every tensor in nodes_ or leafs_ (when indexed_)
    bool indexed_ = true; // false for views, which are never extended
};

}  // namespace xb
