#include "ggml_devices/ggml_types.hpp"

#include "formats/gguf.hpp"

namespace xb::ggml_devices {

std::optional<ggml_type> ggml_type_of(DType type) {
    const std::optional<uint32_t> id = ggml_type_id(type);
    if (!id || *id >= static_cast<uint32_t>(GGML_TYPE_COUNT)) return std::nullopt;
    const auto t = static_cast<ggml_type>(*id);
    // A type id ggml retired has no traits (its block size is 0).
    if (ggml_blck_size(t) == 0 || ggml_type_size(t) == 0) return std::nullopt;
    return t;
}

}  // namespace xb::ggml_devices
