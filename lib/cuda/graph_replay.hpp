// Launching a graph's kernels as one CUDA graph (cudaGraphLaunch) instead of one launch per node:
// a one-token decode of an 8B model is ~500 small kernels, whose launches cost the host more time
// than the GPU spends on them. ggml's CUDA backend does the same.
//
// GraphKey says when two graph computes would launch the same kernels with the same arguments, and
// GraphReplayPolicy decides, per compute, whether to launch node by node, to capture the launches
// into a CUDA graph, or to replay the one captured before. Pure host code, unit-tested without a GPU.
#pragma once

#include <array>
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

// What to do with one compute, and for Capture and Replay the place of its graph among the held
// ones (0 .. kHeldGraphs - 1), where the backend keeps that graph's executable form.
struct GraphDecision {
    GraphLaunch launch = GraphLaunch::Nodes;
    int place = -1;
};

// Up to kHeldGraphs graphs computed lately are remembered, so that graphs taking turns on one GPU
// (the splits of a placement, ggml's graphs per split) each get their own capture. A graph is
// captured at its second compute while remembered and replayed from the third on, for as long as it
// stays remembered: a graph computed once (a test, a node of backend-compare) never pays for a
// capture. A new graph takes the place of the one used longest ago. A graph whose capture failed,
// or whose replay could not be launched, is launched node by node while remembered, and after
// kMaxCaptureFailures failures capturing stops for the backend.
class GraphReplayPolicy {
public:
    static constexpr int kHeldGraphs = 4;
    static constexpr int kMaxCaptureFailures = 3;

    explicit GraphReplayPolicy(bool enabled) : enabled_(enabled) {}

    GraphDecision decide(GraphKey key);
    // The outcome of the capture decide() asked for at `place`; capture_failed() also after a replay
    // that could not be launched.
    void captured(int place);
    void capture_failed(int place);

    bool enabled() const { return enabled_; }
    int captures() const { return captures_; }
    int replays() const { return replays_; }
    int failures() const { return failures_; }

private:
    enum class State { Empty, Seen, Captured, Failed };
    struct Held {
        GraphKey key;
        State state = State::Empty;
        uint64_t last_use = 0;
    };

    bool enabled_;
    std::array<Held, kHeldGraphs> held_;
    uint64_t computes_ = 0;  // the clock of last_use
    int captures_ = 0;
    int replays_ = 0;
    int failures_ = 0;
};

}  // namespace xb::cuda
