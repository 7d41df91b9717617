// How llama.cpp's --tensor-split ratios divide work among devices, shared by the layer split
// (config/layer_split.hpp) and the row split (backend/row_split_buffer.hpp) so that both read
// the ratios the same way.
#pragma once

#include <span>
#include <vector>

namespace xb {

// The ratios' running sums over their total, one per device: device d's share ends at the d-th
// value, and the last is 1. The ratios are non-negative with a positive sum.
inline std::vector<double> tensor_split_ends(std::span<const double> ratios) {
    double total = 0;
    for (const double r : ratios) total += r;
    std::vector<double> ends;
    ends.reserve(ratios.size());
    double running = 0;
    for (const double r : ratios) {
        running += r;
        ends.push_back(running / total);
    }
    return ends;
}

}  // namespace xb
