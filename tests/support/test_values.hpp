// Seeded values the tests fill tensors with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace xbt {

// n values drawn from N(0, 1) with `seed`.
inline std::vector<float> normal_values(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

// n values drawn uniformly from [lo, hi) with `seed`.
inline std::vector<float> uniform_values(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

}  // namespace xbt
