// Device memory of the simulator: the byte budget of each device.
//
// A sim buffer has two halves: an AddressRange (backend/address_range.hpp: reserved with PROT_NONE,
// never readable) that gives tensors their device addresses, and ordinary host storage that holds
// the bytes.
#pragma once

#include <cstddef>
#include <mutex>

#include "core/status.hpp"

namespace xb::sim {

// Bytes of device memory: a total and what live buffers hold. Thread-safe.
class MemoryBudget {
public:
    explicit MemoryBudget(size_t total) : total_(total) {}

    size_t total() const;
    size_t used() const;
    // Takes `bytes` when they are free; false (and nothing taken) when not.
    bool take(size_t bytes);
    void give_back(size_t bytes);
    // Changes the total; false when it is below what is in use.
    bool set_total(size_t total);

private:
    mutable std::mutex mutex_;
    size_t total_;
    size_t used_ = 0;
};

// Bytes taken from a budget, given back on destruction (move-only).
class Reservation {
public:
    Reservation() = default;
    Reservation(MemoryBudget& budget, size_t bytes) : budget_(&budget), bytes_(bytes) {}
    ~Reservation() {
        if (budget_ != nullptr) budget_->give_back(bytes_);
    }
    Reservation(Reservation&& other) noexcept : budget_(other.budget_), bytes_(other.bytes_) { other.budget_ = nullptr; }
    Reservation& operator=(Reservation&&) = delete;

private:
    MemoryBudget* budget_ = nullptr;
    size_t bytes_ = 0;
};

}  // namespace xb::sim
