// Launching a graph's kernels as one CUDA graph (cudaGraphLaunch) instead of one launch per node:
// a one-token decode of an 8B model is ~500 small kernels, whose launches cost the host more time
// than the GPU spends on them. ggml's CUDA backend does the same.
//
// GraphKey says when two graph computes would launch the same kernels with the same arguments, and
// GraphReplayPolicy decides, per compute, whether to launch node by node, to capture the launches
// into a CUDA graph, or to replay the one captured before. Pure host code, unit-tested without a GPU.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.hpp"

namespace xb::cuda {

// Everything the launchers read from a graph: each node's op, type, shape, strides, address and
// op parameters, the same of each of its sources, and the launch context's scratch and first
// error slot. Equal keys launch the same kernels with the same arguments; the values in the
// tensors may differ (a replay reads them where they are).
class GraphKey {
public:
    void add_node(const Tensor& node);
    void add_word(uint64_t word) { words_.push_back(word); }
    void reserve(size_t words) { words_.reserve(words); }
    bool empty() const { return words_.empty(); }
    bool operator==(const GraphKey&) const = default;

private:
    void add_tensor(const Tensor& t);
    std::vector<uint64_t> words_;
};

enum class GraphLaunch {
    Nodes,    // one launch per node
    Capture,  // launch per node into a capture, then launch the captured graph
    Replay,   // launch the graph captured before
};

// A graph computed twice in a row is captured the second time and replayed from the third on, for
// as long as it stays the same: a graph computed once (a test, a node of backend-compare) never
// pays for a capture. One captured graph is held; of graphs that alternate (two splits of a
// placement on one GPU) the one captured first keeps being replayed and the other is launched
// node by node, never captured in turn. A graph whose capture failed is launched node by node from
// then on, and after kMaxCaptureFailures failures capturing stops for the backend.
class GraphReplayPolicy {
public:
    static constexpr int kMaxCaptureFailures = 3;

    explicit GraphReplayPolicy(bool enabled) : enabled_(enabled) {}

    GraphLaunch decide(GraphKey key);
    // The outcome of the capture decide() asked for last; capture_failed() also after a replay that
    // could not be launched (that graph is then launched node by node).
    void captured();
    void capture_failed();

    bool enabled() const { return enabled_; }
    int captures() const { return captures_; }
    int replays() const { return replays_; }
    int failures() const { return failures_; }

private:
    bool enabled_;
    GraphKey last_;      // the key of the last compute
    GraphKey replayed_;  // the key of the captured graph (empty: none)
    GraphKey failed_;    // the key whose capture failed last
    int captures_ = 0;
    int replays_ = 0;
    int failures_ = 0;
};

}  // namespace xb::cuda
