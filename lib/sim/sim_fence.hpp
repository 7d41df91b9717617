// Fence: numbered marks placed in streams, that streams or the host can wait for. The shared
// state behind events, and behind the hand-off of copies between two streams.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>

namespace xb::sim {

class Fence {
public:
    // A new mark, pending until signal(mark). Marks are numbered from 1.
    uint64_t mark();
    // The newest mark (0 when none was made).
    uint64_t last_mark() const;
    // Completes `mark`.
    void signal(uint64_t mark);
    // Blocks until `mark` is complete (at once for mark 0). Each mark is waited for exactly: a
    // mark completing on another stream does not release waiters of an older one.
    void wait(uint64_t mark) const;
    bool is_complete(uint64_t mark) const;

private:
    mutable std::mutex mutex_;
    mutable std::condition_variable completed_;
    uint64_t last_ = 0;
    std::set<uint64_t> pending_;
};

}  // namespace xb::sim
