// Input generators of op cases: how the values of one input are made from a seeded engine.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "exact/ref_array.hpp"

namespace xb::opcheck {

// Cases read and compute values as the exact layer's arrays (exact/ref_array.hpp).
using exact::element_count;
using exact::for_each_index;
using exact::RefArray;
using exact::Shape;

// Makes the values of an input of shape ne (logical order).
using Generator = std::function<std::vector<float>(const Shape& ne, std::mt19937& rng)>;

Generator uniform(float lo, float hi);
// Magnitudes uniform in [lo, hi] with random signs: values kept away from zero (divisors).
Generator signed_uniform(float lo, float hi);
// Integers uniform in [0, n), for positions or gathered row indices.
Generator random_indices(int64_t n);
// Along dim 0, distinct integers from [0, n) (a random draw without replacement in each slice),
// so that set_rows never writes one row twice.
Generator distinct_indices(int64_t n);
// Uniform [lo, hi] values with -inf wherever i0 > n_past + i1 (a causal attention mask).
Generator causal_mask(float lo, float hi, int n_past);

}  // namespace xb::opcheck
