// The countdown behind the test hooks fail_alloc=N and fail_copy=N of the CPU and simulated
// devices: the N-th event counted after arming fails, once. Thread-safe (buffers are allocated and
// copies made from the host thread and from stream workers).
#pragma once

#include <atomic>
#include <charconv>
#include <optional>
#include <string_view>

namespace xb {

// The value of a fail_alloc / fail_copy setting: "none" (0, off) or the index of the event to fail
// (from 1); nullopt for anything else.
inline std::optional<int> parse_failure_index(std::string_view text) {
    if (text == "none") return 0;
    int n = -1;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, n);
    if (ec != std::errc() || ptr != end || text.empty() || n < 0) return std::nullopt;
    return n;
}

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
