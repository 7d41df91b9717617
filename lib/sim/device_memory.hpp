// Device memory of the simulator: address ranges the host cannot touch, and the byte budget.
//
// A sim buffer has two halves: an AddressRange (reserved with PROT_NONE, never readable) that
// gives tensors their device addresses, and ordinary host storage that holds the bytes. Any host
// dereference of a device address faults, as it would on a discrete GPU.
#pragma once

#include <cstddef>
#include <mutex>

#include "core/status.hpp"

namespace xb::sim {

// Reserved, inaccessible virtual addresses (RAII over mmap(PROT_NONE)). No memory is committed.
class AddressRange {
public:
    AddressRange() = default;
    // `size` rounded up to whole pages (at least one). Check `base()` for nullptr on failure.
    explicit AddressRange(size_t size);
    ~AddressRange();
    AddressRange(AddressRange&& other) noexcept;
    AddressRange& operator=(AddressRange&& other) noexcept;

    std::byte* base() const { return base_; }
    size_t size() const { return size_; }  // bytes reserved (page multiple)

private:
    void release();

    std::byte* base_ = nullptr;
    size_t size_ = 0;
};

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
