// Allocating every tensor of a context at once (ggml_backend_alloc_ctx_tensors).
#pragma once

#include <memory>
#include <span>

#include "backend/backend.hpp"
#include "backend/buffer.hpp"
#include "core/context.hpp"

namespace xb {

// Places every tensor of `ctx` that has no data yet in new buffers of `buft`, using as few
// buffers as the type's max_size allows, then initialises the views. The buffers come as one
// MultiBuffer (with no parts when nothing needed memory); OutOfMemory when the type cannot provide
// them, InvalidArgument when one tensor alone exceeds the type's max size.
Result<std::unique_ptr<MultiBuffer>> alloc_ctx_tensors(Context& ctx, BufferType& buft);
// The same for a chosen set of tensors (e.g. the weights that go to one device).
Result<std::unique_ptr<MultiBuffer>> alloc_tensors(std::span<Tensor* const> tensors, BufferType& buft);
Result<std::unique_ptr<MultiBuffer>> alloc_ctx_tensors(Context& ctx, Backend& backend);

}  // namespace xb
