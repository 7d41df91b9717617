// Helpers of the quantization tests: heavy-tailed data and the error of a round trip.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "core/quant.hpp"

namespace xbt {

// n values from a Student t distribution with 2 degrees of freedom (outliers per block).
inline std::vector<float> heavy_tailed_data(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::student_t_distribution<float> dist(2.0f);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

// The RMS error of quantizing x to `type` and back, relative to x's RMS.
inline double relative_rms_error(xb::DType type, const std::vector<float>& x) {
    const auto n = static_cast<int64_t>(x.size());
    std::vector<std::byte> q(xb::row_size(type, n));
    std::vector<float> back(x.size());
    xb::quantize_row(type, x.data(), q.data(), n);
    xb::dequantize_row(type, q.data(), back.data(), n);
    double err = 0, norm = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        err += (static_cast<double>(back[i]) - x[i]) * (static_cast<double>(back[i]) - x[i]);
        norm += static_cast<double>(x[i]) * x[i];
    }
    return std::sqrt(err / norm);
}

}  // namespace xbt
