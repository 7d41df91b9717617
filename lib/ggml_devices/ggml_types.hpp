// xbackend's element types as ggml's: the same GGUF type ids (formats/gguf.hpp), so that every
// storage type reaches ggml as the type a GGUF file names.
#pragma once

#include <ggml.h>

#include <optional>

#include "core/dtype.hpp"

namespace xb::ggml_devices {

// ggml's type for `type`; nullopt where ggml has no type of that id (none today).
std::optional<ggml_type> ggml_type_of(DType type);

}  // namespace xb::ggml_devices
