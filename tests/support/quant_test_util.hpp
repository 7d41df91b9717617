// Helpers of the quantization tests: heavy-tailed data and the error of a round trip.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
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

// The minimum m of legacy block b of a q4_1 / q5_1 row (the f16 after d), 0 for the other types.
// Those two meet the activations' stored sum s with it (as ggml's q8_1 blocks give it), so in a
// reference the minimum's term is m * s and the rest the values less m.
inline double block_minimum(xb::DType t, const std::vector<std::byte>& w, int64_t b) {
    if (t != xb::DType::Q4_1 && t != xb::DType::Q5_1) return 0.0;
    uint16_t bits;
    std::memcpy(&bits, w.data() + static_cast<size_t>(b) * xb::type_size(t) + 2, sizeof bits);
    return xb::f16_to_f32(bits);
}

}  // namespace xbt
