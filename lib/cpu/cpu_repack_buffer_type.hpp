// "CPU_REPACK": the CPU's buffer type for weights stored in the layout its kernels read fastest (as
// ggml's CPU repack buffer type): q4_K matrices whose rows come in multiples of 8 are kept 8 rows
// interleaved (core/q4k_x8.hpp), every other tensor as it is. Not host memory to its users: the
// bytes are not the tensors' own layout, so every access goes through set/get, which convert.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

#include "backend/buffer.hpp"
#include "core/aligned_bytes.hpp"

namespace xb::cpu {

// True when t is stored interleaved in a CPU_REPACK buffer once all its bytes are set: q4_K, rows
// of whole super-blocks, a multiple of 8 rows a matrix, its own storage (not a view), contiguous.
bool q4_K_repackable(const Tensor& t);

class CpuRepackBufferType final : public BufferType {
public:
    explicit CpuRepackBufferType(Device& device) : device_(&device) {}
    const char* name() const override { return "CPU_REPACK"; }
    Result<std::unique_ptr<Buffer>> alloc_buffer(size_t size) override;
    size_t alignment() const override;
    bool repacks(const Tensor& t) const override { return q4_K_repackable(t); }
    Device& device() const override { return *device_; }

private:
    Device* device_;
};

// Writes to a repackable tensor land as plain bytes until all of them are there, then the tensor is
// interleaved in place (a loader's chunked writes cost one pass); writes after that, and reads,
// convert the whole tensor through a plain copy.
class CpuRepackBuffer final : public Buffer {
public:
    CpuRepackBuffer(BufferType& type, AlignedBytes memory) : Buffer(type, memory.size()), memory_(std::move(memory)) {}

protected:
    void* base_impl() override { return memory_.data(); }
    Status set_tensor_impl(Tensor& t, const void* data, size_t offset, size_t size) override;
    Status get_tensor_impl(const Tensor& t, void* data, size_t offset, size_t size) override;
    Status memset_tensor_impl(Tensor& t, uint8_t value, size_t offset, size_t size) override;
    void clear_impl(uint8_t value) override;
    void reset_impl() override;
    StoredLayout stored_layout_impl(const Tensor& t) const override;

private:
    // Applies `write` (to plain bytes of t) and keeps t's stored layout right.
    template <class Write>
    Status write_plain(Tensor& t, size_t offset, size_t size, Write write);

    AlignedBytes memory_;
    mutable std::mutex mutex_;
    // Per repackable tensor: plain bytes written so far, or SIZE_MAX once interleaved.
    std::map<const Tensor*, size_t> state_;
};

}  // namespace xb::cpu
