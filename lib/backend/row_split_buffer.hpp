// RowSplitBufferType: weight matrices split by rows over several devices, as ggml's CUDA split
// buffer (llama.cpp's --split-mode row). A tensor placed in such a buffer has no bytes of its own:
// when it is initialised, each device gets a slice of its rows, in proportion to the ratios and
// rounded to kRowGranularity rows, in a buffer of that device's own type (so each device's memory
// limit applies to its share). Setting and getting the tensor scatter and gather its rows. The
// first device is the main one: a backend of it that computes with row-split weights
// (SimDevice::supports_buft) runs mul_mat with such a weight as one product per slice, each on its
// slice's device, and gathers the rows.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/buffer.hpp"
#include "backend/device.hpp"
#include "core/graph.hpp"

namespace xb {

class RowSplitBufferType final : public BufferType {
public:
    // `ratios`: one per device, non-negative with a positive sum (the config parser checks).
    RowSplitBufferType(std::vector<Device*> devices, std::vector<double> ratios);

    static constexpr int64_t kRowGranularity = 16;  // slice boundaries: whole tiles of the matmul kernels

    const char* name() const override { return name_.c_str(); }  // "SIM0+SIM1 rows"
    Result<std::unique_ptr<Buffer>> alloc_buffer(size_t size) override;
    size_t alignment() const override { return 256; }
    bool is_virtual() const override { return true; }
    Device& device() const override { return *devices_.front(); }  // the main device

    const std::vector<Device*>& devices() const { return devices_; }
    // The first row of each device's slice, then the row count: devices + 1 values, non-decreasing.
    std::vector<int64_t> row_bounds(int64_t rows) const;

private:
    std::vector<Device*> devices_;
    std::vector<double> ends_;  // tensor_split_ends of the ratios
    std::string name_;
};

// One device's rows of a row-split tensor: a tensor of its own in a buffer of that device.
struct RowSlice {
    int device = 0;  // index into RowSplitBufferType::devices()
    int64_t row_begin = 0, row_end = 0;
    std::unique_ptr<Buffer> buffer;
    Tensor tensor;  // [ne0, row_end - row_begin] rows of the tensor, in `buffer`
};

class RowSplitBuffer final : public Buffer {
public:
    RowSplitBuffer(RowSplitBufferType& type, size_t size) : Buffer(type, size) {}

    const RowSplitBufferType& split_type() const { return static_cast<const RowSplitBufferType&>(type()); }
    // The slices of tensor `t` of this buffer, in device order (devices without rows have none);
    // nullptr when t has not been initialised here.
    const std::vector<std::unique_ptr<RowSlice>>* slices(const Tensor& t) const;

protected:
    void* base_impl() override;
    // OutOfMemory (naming the device) when a device cannot hold its rows; InvalidArgument for a
    // tensor that is not a contiguous matrix.
    Status init_tensor_impl(Tensor& t) override;
    Status set_tensor_impl(Tensor& t, const void* data, size_t offset, size_t size) override;
    Status get_tensor_impl(const Tensor& t, void* data, size_t offset, size_t size) override;
    Status memset_tensor_impl(Tensor& t, uint8_t value, size_t offset, size_t size) override;
    void clear_impl(uint8_t value) override;
    void reset_impl() override { slices_.clear(); }

private:
    // Calls f(slice, offset in the slice, offset in the request, bytes) for each slice overlapping
    // bytes [offset, offset + size) of t; stops at the first error.
    template <typename F>
    Status for_each_overlap(const Tensor& t, size_t offset, size_t size, F f) const;

    std::unordered_map<const Tensor*, std::vector<std::unique_ptr<RowSlice>>> slices_;
};

// One slice's share of `node` (a mul_mat of a row-split weight) as a node of its own: the node's
// rows [row_begin, row_end), packed f32, from the slice's rows (`weight`) and activations `x`, each
// as the computing device reads them. Its data is the caller's to set.
void describe_slice_product(const Tensor& node, const RowSlice& slice, Tensor& weight, Tensor& x, Tensor& part);

// The row-split buffer holding t's bytes, or nullptr when t is stored elsewhere.
const RowSplitBuffer* row_split_storage(const Tensor& t);

// What one slice's product of `node` moves between devices when the slice is on another device
// than the main one: the activations sent to the slice's device, and its rows of the result sent
// back. The devices that compute row-split products count exactly these as peer copies.
struct SliceTransfer {
    size_t to_slice = 0;    // node.src[1]'s bytes
    size_t from_slice = 0;  // the slice's rows of the result, f32
};
SliceTransfer slice_transfer(const Tensor& node, const RowSlice& slice);

// The copies a compute of `graph` makes between devices for its products of row-split weights
// (inside the main device's backend, out of the scheduler's sight), per (from, to) device pair.
struct RowSplitCopies {
    int count = 0;
    size_t bytes = 0;
};
std::map<std::pair<std::string, std::string>, RowSplitCopies> row_split_copies(const Graph& graph);

}  // namespace xb
