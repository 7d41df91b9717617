#include "backend/address_range.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <utility>

namespace xb {

namespace {
size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }
}  // namespace

AddressRange::AddressRange(size_t size) {
    const size_t page = page_size();
    if (size > SIZE_MAX - page) return;
    const size_t bytes = size == 0 ? page : (size + page - 1) / page * page;
    // MAP_NORESERVE: only addresses are reserved, nothing counts against the host's memory.
    void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return;
    base_ = static_cast<std::byte*>(p);
    size_ = bytes;
}

AddressRange::~AddressRange() { release(); }

AddressRange::AddressRange(AddressRange&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)), size_(std::exchange(other.size_, 0)) {}

AddressRange& AddressRange::operator=(AddressRange&& other) noexcept {
    if (this != &other) {
        release();
        base_ = std::exchange(other.base_, nullptr);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

void AddressRange::release() {
    if (base_ != nullptr) munmap(base_, size_);
    base_ = nullptr;
    size_ = 0;
}

}  // namespace xb
