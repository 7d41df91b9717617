// Error metrics between a result and a reference, accumulated in double precision.
#pragma once

#include <cstdint>
#include <span>

namespace xb::report {

struct ErrorMetrics {
    double nmse = 0.0;        // sum((a-b)^2) / sum(b^2); 0 when both are zero
    double max_abs = 0.0;     // max |a-b| over finite pairs
    double cosine = 1.0;      // a.b / (|a||b|); 1 when both are zero
    int64_t nan_count = 0;    // positions where exactly one side is NaN, or both differ in NaN-ness
    int64_t inf_mismatch = 0; // positions where an infinity is not matched by the same infinity
    int64_t count = 0;
    // The element that differs most: the first NaN or infinity mismatch if there is one, else the
    // largest |a - b|; -1 when every element matches.
    int64_t worst_index = -1;
    float worst_value = 0.0f;      // a there
    float worst_reference = 0.0f;  // b there
};

// a is the value under test, b the reference. Positions where both hold the same infinity (a
// masked score, say) or both are NaN are equal and excluded from the sums.
ErrorMetrics compare(std::span<const float> a, std::span<const float> b);

}  // namespace xb::report
