// Size arithmetic on values that come from outside (configs, model files, op params): element
// counts, byte sizes and strided extents are computed with every product and sum checked, so that
// a hostile shape is reported instead of wrapping to a small size.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "core/dtype.hpp"
#include "core/tensor.hpp"

namespace xb {

// The largest tensor the library accepts: 2^60 bytes (1 EiB), far beyond any device, and small
// enough that sums of a few tensors' sizes cannot overflow.
inline constexpr uint64_t kMaxTensorBytes = uint64_t{1} << 60;

inline std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
    uint64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
    return r;
}
inline std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
    uint64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
    return r;
}

// Elements of a shape with non-negative dims; nullopt past 2^63 - 1.
std::optional<int64_t> checked_nelements(const std::array<int64_t, kMaxDims>& ne);
// Bytes of a contiguous tensor (ne[0] a whole number of blocks); nullopt on overflow.
std::optional<uint64_t> checked_nbytes(DType type, const std::array<int64_t, kMaxDims>& ne);
// One past the last byte a strided layout touches (its nbytes); nullopt on overflow.
std::optional<uint64_t> checked_extent(DType type, const std::array<int64_t, kMaxDims>& ne,
                                       const std::array<size_t, kMaxDims>& nb);

// "16.0 EiB": the size of a product of dims for messages, also when it overflows 64 bits.
std::string approximate_bytes_text(DType type, const std::array<int64_t, kMaxDims>& ne);
std::string bytes_text(double bytes);

}  // namespace xb
