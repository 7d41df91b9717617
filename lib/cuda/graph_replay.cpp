#include "cuda/graph_replay.hpp"

#include <bit>
#include <utility>

namespace xb::cuda {

void GraphKey::add_tensor(const Tensor& t) {
    words_.push_back(static_cast<uint64_t>(t.type));
    for (int64_t n : t.ne) words_.push_back(static_cast<uint64_t>(n));
    for (size_t b : t.nb) words_.push_back(b);
    words_.push_back(std::bit_cast<uintptr_t>(t.data));
}

void GraphKey::add_node(const Tensor& node) {
    words_.push_back(static_cast<uint64_t>(node.op));
    add_tensor(node);
    for (int32_t p : node.op_params) words_.push_back(static_cast<uint32_t>(p));
    // Each source, or one word marking its absence (so that sources cannot shift between slots).
    for (const Tensor* s : node.src) {
        if (s == nullptr) {
            words_.push_back(~uint64_t{0});
            continue;
        }
        add_tensor(*s);
    }
}

GraphLaunch GraphReplayPolicy::decide(GraphKey key) {
    if (!enabled_ || key.empty()) return GraphLaunch::Nodes;
    if (!replayed_.empty() && key == replayed_) {
        ++replays_;
        last_ = std::move(key);
        return GraphLaunch::Replay;
    }
    if (!failed_.empty() && key == failed_) return GraphLaunch::Nodes;
    const bool again = key == last_;
    last_ = std::move(key);
    return again ? GraphLaunch::Capture : GraphLaunch::Nodes;
}

void GraphReplayPolicy::captured() {
    replayed_ = last_;
    ++captures_;
}

void GraphReplayPolicy::capture_failed() {
    if (replayed_ == last_) replayed_ = GraphKey{};
    failed_ = last_;
    if (++failures_ >= kMaxCaptureFailures) enabled_ = false;
}

}  // namespace xb::cuda
