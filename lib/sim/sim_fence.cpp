#include "sim/sim_fence.hpp"

namespace xb::sim {

uint64_t Fence::mark() {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.insert(++last_);
    return last_;
}

uint64_t Fence::last_mark() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_;
}

void Fence::signal(uint64_t mark) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        pending_.erase(mark);
    }
    completed_.notify_all();
}

void Fence::wait(uint64_t mark) const {
    std::unique_lock<std::mutex> lock(mutex_);
    completed_.wait(lock, [&] { return pending_.count(mark) == 0; });
}

bool Fence::is_complete(uint64_t mark) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return pending_.count(mark) == 0;
}

}  // namespace xb::sim
