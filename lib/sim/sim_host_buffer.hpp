// The simulated device's pinned host memory ("SIM0_Host", with the device setting host_buffer=1):
// host memory the CPU computes in, labelled as pinned, whose copies to and from a simulated device
// are modelled at the link's full bandwidth where pageable host memory gets the slower pageable
// bandwidth (sim_settings.hpp: pageable_ratio), as a GPU's page-locked host buffers.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "backend/buffer.hpp"
#include "backend/buffer_type.hpp"
#include "backend/host_buffer.hpp"

namespace xb::sim {

class SimDevice;

// The address ranges of every live pinned host buffer of one family of simulated devices: pinned
// memory is pinned for all of them, as CUDA's portable page-locked memory. Thread-safe (the streams'
// workers ask too).
class PinnedRanges {
public:
    void add(const void* base, size_t bytes);
    void remove(const void* base);
    // [p, p + bytes) lies inside one pinned range.
    bool contains(const void* p, size_t bytes) const;

private:
    mutable std::mutex mutex_;
    std::map<const std::byte*, size_t> ranges_;  // base -> size
};

class SimHostBufferType final : public BufferType {
public:
    SimHostBufferType(SimDevice& device, std::shared_ptr<PinnedRanges> pinned);

    const char* name() const override { return name_.c_str(); }
    // OutOfMemory when the host cannot back it, or when fail_alloc picks this allocation.
    Result<std::unique_ptr<Buffer>> alloc_buffer(size_t size) override;
    size_t alignment() const override { return kHostAlignment; }  // as the CPU's buffers
    bool is_host() const override { return true; }
    bool is_pinned() const override { return true; }
    Device& device() const override;

private:
    SimDevice* device_;
    std::shared_ptr<PinnedRanges> pinned_;
    std::string name_;
};

// Host memory registered as pinned for its lifetime.
class SimHostBuffer final : public HostMemoryBuffer {
public:
    SimHostBuffer(BufferType& type, AlignedBytes memory, std::shared_ptr<PinnedRanges> pinned);
    ~SimHostBuffer() override;
    SimHostBuffer(const SimHostBuffer&) = delete;
    SimHostBuffer& operator=(const SimHostBuffer&) = delete;

private:
    AlignedBytes memory_;
    std::shared_ptr<PinnedRanges> pinned_;
};

}  // namespace xb::sim
