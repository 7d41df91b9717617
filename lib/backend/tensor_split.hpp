// How llama.cpp's --tensor-split ratios divide work among devices, shared by the layer split
// (config/layer_split.hpp) and the row split (backend/row_split_buffer.hpp) so that both read
// the ratios the same way.
#pragma once

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

namespace xb {

// The ratios' running sums over their total, one per device: device d's share ends at the d-th
// value, which never decreases, and the last is exactly 1. The ratios are non-negative and finite
// with a positive sum (the config parser checks). Each is divided by the largest first, so that
// their sum can neither overflow (two ratios of 1e308 summed to infinity, and every share to NaN)
// nor vanish (ratios of 1e-320). Without a positive finite ratio the devices share evenly.
inline std::vector<double> tensor_split_ends(std::span<const double> ratios) {
    double largest = 0;
    for (const double r : ratios) {
        if (std::isfinite(r)) largest = std::max(largest, r);
    }
    std::vector<double> scaled;
    scaled.reserve(ratios.size());
    for (const double r : ratios) scaled.push_back(largest > 0 ? (std::isfinite(r) && r > 0 ? r / largest : 0.0) : 1.0);
    double total = 0;
    for (const double r : scaled) total += r;  // at most the device count
    std::vector<double> ends;
    ends.reserve(ratios.size());
    double running = 0;
    for (const double r : scaled) {
        running += r;
        ends.push_back(std::min(1.0, running / total));
    }
    if (!ends.empty()) ends.back() = 1.0;
    return ends;
}

}  // namespace xb
