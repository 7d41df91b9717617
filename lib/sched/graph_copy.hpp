// graph_copy: a graph with its tensors and data copied to another backend; and
// compare_graph_backend: run two backends over the same graph node by node (ggml's utilities of
// the same names), with what a compare tool needs on top: nodes the second backend does not
// support, every node computed from the first backend's inputs (isolate), a node computed again
// that way on request (to tell a node that computes wrong from one that carries its inputs'
// difference), and a graph as the scheduler places it, read node by node through its eval
// callback. backend-compare is built on these.
#pragma once

#include <functional>
#include <memory>

#include "backend/backend.hpp"
#include "core/context.hpp"
#include "core/graph.hpp"
#include "core/status.hpp"
#include "sched/scheduler.hpp"

namespace xb {

struct GraphCopy {
    std::unique_ptr<Context> allocated;    // copies that own memory
    std::unique_ptr<Context> unallocated;  // copies of views
    std::unique_ptr<MultiBuffer> buffer;   // on the target backend
    Graph graph;                           // node i is the copy of the original's node i
};

struct GraphCopyOptions {
    // Leafs that no node writes into (weights, constants), where `backend` can read them, are the
    // original's own rather than copies: the copy then costs the memory of the nodes and of the
    // leafs the graph writes (a KV cache) only. Off: every tensor is copied.
    bool share_read_only_leafs = false;
};

// Copies every tensor the graph reaches, with its current data, into a new buffer of `backend`.
// The original graph must be allocated.
Result<GraphCopy> graph_copy(Backend& backend, const Graph& graph, const GraphCopyOptions& options = {});

// Called for each computed node i with backend1's result t1 and backend2's t2 (views skipped);
// return false to stop the walk.
using CompareCallback = std::function<bool(int index, const Tensor& t1, const Tensor& t2)>;

// Copies `graph` (allocated for backend1, inputs set) to backend2, then computes node by node on
// both and hands each pair to `callback`. Each backend computes from its own earlier results.
Status compare_graph_backend(Backend& backend1, Backend& backend2, const Graph& graph, const CompareCallback& callback);

// One computed node of a comparison, as its callback sees it.
struct NodeComparison {
    int index = 0;
    const Tensor* t1 = nullptr;  // backend1's result (the reference)
    const Tensor* t2 = nullptr;  // backend2's (or the placed run's)
    // False for a node backend2 does not support (CompareOptions::skip_unsupported): it was not
    // computed there, and t2 holds backend1's result so that later nodes compare like with like.
    bool supported = true;
    // Computes the node once more on backend2 from backend1's current inputs, in a second copy of
    // the graph (made at the first call), and returns that result; t2 and the run stay as they are.
    // Within tolerance that way, the node computes right and only carries its inputs' difference.
    // Empty where the comparison cannot (the scheduled one: its allocator reuses the sources'
    // memory).
    std::function<Result<const Tensor*>()> recompute_from_reference{};
    // The truth's result (CompareOptions::truth), computed from the truth's own earlier results:
    // what the node is in exact arithmetic when the truth is the F64 device; nullptr without one.
    const Tensor* truth = nullptr;
};
// Return false to stop the walk.
using NodeCallback = std::function<bool(const NodeComparison& node)>;

struct CompareOptions {
    // A node backend2 does not support is not computed there (see NodeComparison::supported).
    // Off: it is handed to backend2 anyway, whose graph_compute then reports it.
    bool skip_unsupported = false;
    // backend2 computes every node from backend1's inputs: after the callback, backend1's result
    // replaces backend2's, so that each node shows only the error it makes itself (as ggml's
    // test-backend-ops checks one op at a time).
    bool isolate = false;
    // A third backend that computes every node too, from its own results (normally the F64 device:
    // each node's exact value), so that both sides' distance from it can be measured. nullptr: none.
    Backend* truth = nullptr;
};

// compare_graph_backend with options, and each node handed over as a NodeComparison.
Status compare_graph_backend(Backend& backend1, Backend& backend2, const Graph& graph, const CompareOptions& options,
                             const NodeCallback& callback);

// compare_graph_backend over several computes of one graph: a sequence decoded token after token,
// its inputs changed between the computes (config::Model::move_batch). The copies are made at the
// first step; each later step copies only the graph's inputs into them, so that each side keeps
// the KV cache and recurrent states its own computes wrote, and the state after each token is
// compared as the node that writes it. `graph` and the backends outlive the comparison.
class GraphComparison {
public:
    GraphComparison(Backend& backend1, Backend& backend2, const Graph& graph, const CompareOptions& options);
    ~GraphComparison();
    GraphComparison(const GraphComparison&) = delete;
    GraphComparison& operator=(const GraphComparison&) = delete;

    // One compute of the graph on each side, node by node, from the inputs `graph` holds now.
    Status step(const NodeCallback& callback);

private:
    struct Copies;
    Backend& backend1_;
    Backend& backend2_;
    const Graph& graph_;
    CompareOptions options_;
    std::unique_ptr<Copies> copies_;  // made at the first step
};

// The graph as `sched` places it against backend1 computing it alone, node by node: `sched`
// computes `placed` (allocated by it, inputs set) with an eval callback that stops after every
// computed node, wherever the placement put it (a layer or row split over several devices
// included); backend1 then computes `reference` (the same graph built once more, allocated on
// backend1 with every node kept and its inputs set) up to the same node, and the pair goes to
// `callback` (t1 the reference's node, t2 the placed one; no recompute_from_reference). The
// scheduler's eval callback is restored to none afterwards. Stopping through `callback` is not an
// error.
Status compare_graph_scheduled(Backend& backend1, const Graph& reference, Scheduler& sched, Graph& placed,
                               const NodeCallback& callback);

}  // namespace xb
