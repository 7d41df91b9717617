#include "opcheck/generators.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace xb::opcheck {

Generator uniform(float lo, float hi) {
    return [lo, hi](const Shape& ne, std::mt19937& rng) {
        std::uniform_real_distribution<float> dist(lo, hi);
        std::vector<float> v(static_cast<size_t>(element_count(ne)));
        for (float& x : v) x = dist(rng);
        return v;
    };
}

Generator signed_uniform(float lo, float hi) {
    return [lo, hi](const Shape& ne, std::mt19937& rng) {
        std::uniform_real_distribution<float> dist(lo, hi);
        std::bernoulli_distribution negative(0.5);
        std::vector<float> v(static_cast<size_t>(element_count(ne)));
        for (float& x : v) x = negative(rng) ? -dist(rng) : dist(rng);
        return v;
    };
}

Generator random_indices(int64_t n) {
    return [n](const Shape& ne, std::mt19937& rng) {
        std::uniform_int_distribution<int64_t> dist(0, n - 1);
        std::vector<float> v(static_cast<size_t>(element_count(ne)));
        for (float& x : v) x = static_cast<float>(dist(rng));
        return v;
    };
}

Generator distinct_indices(int64_t n) {
    return [n](const Shape& ne, std::mt19937& rng) {
        std::vector<float> v;
        std::vector<int64_t> all(static_cast<size_t>(n));
        for (int64_t slice = 0; slice < element_count(ne) / ne[0]; ++slice) {
            std::iota(all.begin(), all.end(), 0);
            std::shuffle(all.begin(), all.end(), rng);
            for (int64_t i = 0; i < ne[0]; ++i) v.push_back(static_cast<float>(all[static_cast<size_t>(i)]));
        }
        return v;
    };
}

Generator causal_mask(float lo, float hi, int n_past) {
    return [lo, hi, n_past](const Shape& ne, std::mt19937& rng) {
        std::vector<float> v = uniform(lo, hi)(ne, rng);
        for_each_index(ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
            if (i0 > n_past + i1) v[static_cast<size_t>(i0 + ne[0] * (i1 + ne[1] * (i2 + ne[2] * i3)))] = -INFINITY;
        });
        return v;
    };
}

}  // namespace xb::opcheck
