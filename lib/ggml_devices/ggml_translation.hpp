// xbackend graphs as ggml graphs: each node becomes the ggml op of the same meaning, built with
// ggml's own op builders (so that ggml's semantics and shape rules apply), over tensors that point
// at the same memory as xbackend's.
//
// Memory is shared, not copied: a node's ggml tensor gets the node's address in its ggml buffer
// (the xbackend buffer of a ggml device wraps one, ggml_buffer.hpp), so that what ggml computes is
// read back through xbackend's own buffer access. Sources outside the graph being translated
// (weights, inputs, nodes computed by an earlier part) and views become ggml tensors with the same
// type, shape, strides and address and no op: leafs of the ggml graph.
//
// The op builders abort on arguments they refuse (GGML_ASSERT). A node is therefore built only
// after the conditions of ggml's asserts for its op were checked here, so that what ggml would
// refuse is a NotSupported status naming the node, not an abort.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "core/graph.hpp"
#include "core/status.hpp"
#include "core/tensor.hpp"

struct ggml_context;
struct ggml_cgraph;
struct ggml_tensor;
struct ggml_backend_buffer;

namespace xb::ggml_devices {

// Finds the ggml buffer that holds an xbackend tensor's bytes, or nullptr when the tensor is not in
// a ggml device's memory (a translation for a device then fails naming it).
using BufferOf = std::function<ggml_backend_buffer*(const Tensor& t)>;

// One translation: a ggml context (metadata only) with the tensors and the graph.
class GraphTranslation {
public:
    // `buffer_of` gives each tensor's ggml buffer; empty translates metadata only (supports_op).
    explicit GraphTranslation(BufferOf buffer_of = {});
    ~GraphTranslation();
    GraphTranslation(const GraphTranslation&) = delete;
    GraphTranslation& operator=(const GraphTranslation&) = delete;

    // Builds the ggml graph of every node that computes something. An error names the node and why
    // ggml cannot take it, or the tensor whose memory is not a ggml buffer's.
    Status translate(const Graph& graph);
    // The one node, for a device's supports_op; its sources are leafs without memory.
    Result<ggml_tensor*> translate_node(const Tensor& node);

    ggml_cgraph* graph() const { return graph_; }
    // Nodes [i0, i1) of graph() as a graph of their own (the same one object each call), to compute
    // a graph in pieces.
    ggml_cgraph* segment(int i0, int i1);
    // Nodes of the ggml graph (0 when the xbackend graph computes nothing).
    int n_nodes() const;

private:
    // A context for `n_tensors` tensors (tensors_needed), with the graph and its segment when
    // `with_graphs`.
    Status make_context(size_t n_tensors, bool with_graphs);
    // The ggml tensor standing for `t`: built once, then the same one. A node being translated is
    // built with its op; anything else (a leaf, a view, a node of another part) is a leaf over its
    // memory.
    Result<ggml_tensor*> tensor_of(const Tensor& t);
    Result<ggml_tensor*> leaf(const Tensor& t);
    Result<ggml_tensor*> build(const Tensor& node);
    Status place(const Tensor& t, ggml_tensor* g) const;

    BufferOf buffer_of_;
    ggml_context* ctx_ = nullptr;
    ggml_cgraph* graph_ = nullptr;
    ggml_cgraph* segment_ = nullptr;
    std::unordered_map<const Tensor*, ggml_tensor*> tensors_;
    std::unordered_set<const Tensor*> in_graph_;  // the nodes being translated (others are leafs)
};

}  // namespace xb::ggml_devices
