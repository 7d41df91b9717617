#include "core/size_math.hpp"

#include <cstdio>
#include <iterator>

namespace xb {

std::optional<int64_t> checked_nelements(const std::array<int64_t, kMaxDims>& ne) {
    uint64_t n = 1;
    for (int64_t d : ne) {
        if (d < 0) return std::nullopt;
        const std::optional<uint64_t> m = checked_mul(n, static_cast<uint64_t>(d));
        if (!m || *m > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
        n = *m;
    }
    return static_cast<int64_t>(n);
}

std::optional<uint64_t> checked_nbytes(DType type, const std::array<int64_t, kMaxDims>& ne) {
    const std::optional<int64_t> n = checked_nelements(ne);
    if (!n) return std::nullopt;
    return checked_mul(static_cast<uint64_t>(*n / blck_size(type)), type_size(type));
}

std::optional<uint64_t> checked_extent(DType type, const std::array<int64_t, kMaxDims>& ne,
                                       const std::array<size_t, kMaxDims>& nb) {
    for (int64_t d : ne) {
        if (d < 0) return std::nullopt;
        if (d == 0) return 0;
    }
    // The first block, then (ne[i] - 1) steps of nb[i] along each dim (dim 0 in blocks).
    const int64_t blocks0 = ne[0] / blck_size(type);
    std::optional<uint64_t> end = type_size(type);
    for (int i = 0; i < kMaxDims && end; ++i) {
        const uint64_t steps = static_cast<uint64_t>((i == 0 ? blocks0 : ne[static_cast<size_t>(i)]) - 1);
        const std::optional<uint64_t> span = checked_mul(steps, nb[static_cast<size_t>(i)]);
        end = span ? checked_add(*end, *span) : std::nullopt;
    }
    return end;
}

std::string bytes_text(double bytes) {
    static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
    size_t unit = 0;
    while (bytes >= 1024.0 && unit + 1 < std::size(kUnits)) {
        bytes /= 1024.0;
        ++unit;
    }
    char text[48];
    std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[unit]);
    return text;
}

std::string approximate_bytes_text(DType type, const std::array<int64_t, kMaxDims>& ne) {
    double bytes = static_cast<double>(type_size(type)) / static_cast<double>(blck_size(type));
    for (int64_t d : ne) bytes *= static_cast<double>(d);
    return bytes_text(bytes);
}

}  // namespace xb
