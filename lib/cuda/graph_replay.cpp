#include "cuda/graph_replay.hpp"

#include <algorithm>
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

GraphDecision GraphReplayPolicy::decide(GraphKey key) {
    if (!enabled_ || key.empty()) return {};
    ++computes_;
    const auto remembered =
        std::find_if(held_.begin(), held_.end(), [&](const Held& h) { return h.state != State::Empty && h.key == key; });
    if (remembered == held_.end()) {  // a graph not remembered: it takes the place used longest ago
        const auto oldest = std::min_element(held_.begin(), held_.end(),
                                             [](const Held& a, const Held& b) { return a.last_use < b.last_use; });
        *oldest = Held{std::move(key), State::Seen, computes_};
        return {};
    }
    Held& h = *remembered;
    const int place = static_cast<int>(remembered - held_.begin());
    h.last_use = computes_;
    switch (h.state) {
        case State::Captured:
            ++replays_;
            return {GraphLaunch::Replay, place};
        case State::Seen:
            return {GraphLaunch::Capture, place};
        case State::Empty:
        case State::Failed:
            break;
    }
    return {};
}

void GraphReplayPolicy::captured(int place) {
    held_.at(static_cast<size_t>(place)).state = State::Captured;
    ++captures_;
}

void GraphReplayPolicy::capture_failed(int place) {
    held_.at(static_cast<size_t>(place)).state = State::Failed;
    if (++failures_ >= kMaxCaptureFailures) enabled_ = false;
}

}  // namespace xb::cuda
