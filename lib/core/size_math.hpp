// Size arithmetic on values that come from outside (configs, model files, op params): element
// counts, byte sizes and strided extents are computed with every product and sum checked, so that
// a hostile shape is reported instead of wrapping to a small size.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

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

// A double as an integer of type T, truncated toward zero, without the undefined behaviour of a
// plain cast out of range: nullopt for NaN and for values outside T's range.
template <typename T>
std::optional<T> checked_integer(double x) {
    static_assert(std::is_integral_v<T>);
    const double t = std::trunc(x);
    // T's range as exact doubles: [-2^digits, 2^digits) for signed T, [0, 2^digits) for unsigned.
    const double end = std::ldexp(1.0, std::numeric_limits<T>::digits);
    const double begin = std::is_signed_v<T> ? -end : 0.0;
    if (!(t >= begin) || !(t < end)) return std::nullopt;
    return static_cast<T>(t);
}
// The same clamped to T's range instead (NaN gives 0): for values a user may set out of range on
// purpose, such as a constant too large for an integer tensor.
template <typename T>
T clamped_integer(double x) {
    if (std::isnan(x)) return 0;
    if (const std::optional<T> v = checked_integer<T>(x)) return *v;
    return x < 0 ? std::numeric_limits<T>::min() : std::numeric_limits<T>::max();
}
// The first `fraction` of n items (rows, layers, bytes): floor(n * fraction) with the fraction
// clamped to [0, 1] and NaN taken as 0, so that a ratio gone wrong moves a boundary, never past n.
inline int64_t share_of(int64_t n, double fraction) {
    if (!(fraction > 0.0)) return 0;
    if (fraction >= 1.0) return n;
    return std::min(n, clamped_integer<int64_t>(static_cast<double>(n) * fraction));
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
