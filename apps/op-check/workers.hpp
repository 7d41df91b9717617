// Cases checked by parallel workers (-j N). Backends are used from one thread at a time, so every
// worker makes its own (make_state) and then takes case indices from a shared counter until none
// is left; results go to per-index slots, so the report's order does not depend on timing.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/status.hpp"

namespace xb::tools::opcheck {

// Calls work(state, i) for every i in [0, n) on `jobs` threads (at most n), each with a State
// from make_state(); progress(done) after each item, serialised. The first make_state failure.
template <typename State>
Status parallel_for(size_t n, int jobs, const std::function<Result<State>()>& make_state,
                    const std::function<void(State&, size_t)>& work, const std::function<void(size_t)>& progress) {
    std::atomic<size_t> next{0};
    std::mutex lock;
    size_t done = 0;
    Status failure;
    const auto worker = [&] {
        Result<State> state = make_state();
        if (!state.is_ok()) {
            std::lock_guard<std::mutex> guard(lock);
            if (failure.is_ok()) failure = state.status();
            return;
        }
        for (size_t i = next++; i < n; i = next++) {
            work(*state, i);
            std::lock_guard<std::mutex> guard(lock);
            progress(++done);
        }
    };
    const size_t threads = std::clamp<size_t>(static_cast<size_t>(std::max(jobs, 1)), 1, std::max<size_t>(n, 1));
    std::vector<std::jthread> pool;
    for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();  // the calling thread is worker 0
    pool.clear();  // joins
    return failure;
}

}  // namespace xb::tools::opcheck
