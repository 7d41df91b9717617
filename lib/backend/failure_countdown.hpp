// The countdown behind the test hooks fail_alloc=N and fail_copy=N of the CPU and simulated
// devices: the N-th event counted after arming fails, once. Thread-safe (buffers are allocated and
// copies made from the host thread and from stream workers).
#pragma once

#include <atomic>

namespace xb {

class FailureCountdown {
public:
    void arm(int n) { remaining_.store(n > 0 ? n : 0); }
    // Events left until the failing one (0: off, or it has happened).
    int remaining() const { return remaining_.load(); }
    // Counts one event; true for the one that must fail.
    bool next_fails() {
        int r = remaining_.load();
        while (r > 0 && !remaining_.compare_exchange_weak(r, r - 1)) {
        }
        return r == 1;
    }

private:
    std::atomic<int> remaining_{0};
};

}  // namespace xb
