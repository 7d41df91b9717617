#include "config/layer_split.hpp"

#include <algorithm>

#include "backend/tensor_split.hpp"

namespace xb::config {

std::vector<int> split_layer_devices(int n_items, std::span<const double> ratios) {
    const std::vector<double> bounds = tensor_split_ends(ratios);
    std::vector<int> devices;
    devices.reserve(static_cast<size_t>(std::max(n_items, 0)));
    const int last = static_cast<int>(ratios.size()) - 1;
    for (int i = 0; i < n_items; ++i) {
        const double x = static_cast<double>(i) / n_items;
        const auto d = static_cast<int>(std::upper_bound(bounds.begin(), bounds.end(), x) - bounds.begin());
        devices.push_back(std::min(d, last));  // rounding at the top end stays on the last device
    }
    return devices;
}

}  // namespace xb::config
