#include "sim/device_memory.hpp"

#include <utility>

namespace xb::sim {

size_t MemoryBudget::total() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return total_;
}

size_t MemoryBudget::used() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return used_;
}

bool MemoryBudget::take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (bytes > total_ - used_) return false;
    used_ += bytes;
    return true;
}

void MemoryBudget::give_back(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    used_ -= bytes;
}

bool MemoryBudget::set_total(size_t total) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (total < used_) return false;
    total_ = total;
    return true;
}

}  // namespace xb::sim
