#include "sim/sim_host_buffer.hpp"

#include "sim/sim_device.hpp"

namespace xb::sim {

void PinnedRanges::add(const void* base, size_t bytes) {
    if (base == nullptr || bytes == 0) return;
    std::lock_guard<std::mutex> lock(mutex_);
    ranges_[static_cast<const std::byte*>(base)] = bytes;
}

void PinnedRanges::remove(const void* base) {
    std::lock_guard<std::mutex> lock(mutex_);
    ranges_.erase(static_cast<const std::byte*>(base));
}

bool PinnedRanges::contains(const void* p, size_t bytes) const {
    const auto* at = static_cast<const std::byte*>(p);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = ranges_.upper_bound(at);  // the first range starting after p
    if (it == ranges_.begin()) return false;
    --it;
    const size_t offset = static_cast<size_t>(at - it->first);
    return offset <= it->second && bytes <= it->second - offset;
}

SimHostBufferType::SimHostBufferType(SimDevice& device, std::shared_ptr<PinnedRanges> pinned)
    : device_(&device), pinned_(std::move(pinned)), name_(std::string(device.name()) + "_Host") {}

Device& SimHostBufferType::device() const { return *device_; }

Result<std::unique_ptr<Buffer>> SimHostBufferType::alloc_buffer(size_t size) {
    const auto fail = [&](const std::string& why) {
        return Status(StatusCode::OutOfMemory, name_ + ": cannot allocate " + std::to_string(size) +
                                                   " bytes of pinned host memory: " + why);
    };
    if (device_->allocation_fails()) return fail("the failure fail_alloc injected");
    AlignedBytes memory(size, kHostAlignment);
    if (size > 0 && memory.data() == nullptr) return fail("the host cannot back it");
    return std::unique_ptr<Buffer>(std::make_unique<SimHostBuffer>(*this, std::move(memory), pinned_));
}

SimHostBuffer::SimHostBuffer(BufferType& type, AlignedBytes memory, std::shared_ptr<PinnedRanges> pinned)
    : HostMemoryBuffer(type, memory.data(), memory.size()), memory_(std::move(memory)), pinned_(std::move(pinned)) {
    pinned_->add(memory_.data(), memory_.size());
}

SimHostBuffer::~SimHostBuffer() { pinned_->remove(memory_.data()); }

}  // namespace xb::sim
