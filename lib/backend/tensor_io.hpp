// Reading, writing and copying tensor data wherever it lives (ggml_backend_tensor_set & co.).
//
// The tensor must be allocated and the byte range [offset, offset + size) must lie inside it;
// violations are OutOfRange / InvalidArgument statuses (checked by Buffer's public members, and here
// for the asynchronous forms, which go to a backend).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.hpp"
#include "backend/buffer.hpp"
#include "core/status.hpp"
#include "core/tensor.hpp"

namespace xb {

Status tensor_set(Tensor& t, const void* data, size_t offset, size_t size);
Status tensor_get(const Tensor& t, void* data, size_t offset, size_t size);
Status tensor_memset(Tensor& t, uint8_t value, size_t offset, size_t size);
// Copies all of src into dst (same layout), through host memory when no direct path exists.
Status tensor_copy(const Tensor& src, Tensor& dst);

// Queued on `backend`; without a queue these are the synchronous forms.
Status tensor_set_async(Backend& backend, Tensor& t, const void* data, size_t offset, size_t size);
Status tensor_get_async(Backend& backend, const Tensor& t, void* data, size_t offset, size_t size);
// Copies src (of src_backend) into dst (of dst_backend) on dst_backend's stream; when that backend
// cannot, both backends are synchronized and the copy is done synchronously.
Status tensor_copy_async(Backend& src_backend, Backend& dst_backend, const Tensor& src, Tensor& dst);

// Places t at `addr` inside `buffer` (which must hold t's alloc size there) and initialises it.
Status tensor_alloc(Buffer& buffer, Tensor& t, void* addr);
// Points a view at its source's data (the source must be allocated).
Status view_init(Tensor& t);

// --- typed conveniences -----------------------------------------------------------------------------
// Writes f32 values into a tensor of any float type, converting; t must be contiguous and
// values.size() == t.nelements().
Status tensor_set_f32(Tensor& t, std::span<const float> values);
// The bytes tensor_set_f32 would write: values.size() == t.nelements() f32 values stored in t's
// type (rows quantized in parallel), for a contiguous t. t need not be allocated.
Result<std::vector<std::byte>> f32_to_tensor_bytes(const Tensor& t, std::span<const float> values);
// Reads every element of a float or i32 tensor (contiguous or not) as f32, in logical order.
Result<std::vector<float>> tensor_get_f32(const Tensor& t);

}  // namespace xb
