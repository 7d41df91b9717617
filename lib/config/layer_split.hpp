// Which device takes each layer when several share a model (llama.cpp's --split-mode layer with
// --tensor-split): the devices take consecutive runs of layers in proportion to their ratios.
#pragma once

#include <span>
#include <vector>

namespace xb::config {

// The device (an index into `ratios`) of each of `n_items` consecutive layers. As llama.cpp: with
// s_d the ratios' running sum up to and including device d over their total, item i goes to the
// first device with s_d > i / n_items. So device d takes ceil(n s_d) - ceil(n s_{d-1}) items, within
// one of its share n r_d / total; a zero ratio takes none. The ratios are non-negative with a
// positive sum (the config parser checks).
std::vector<int> split_layer_devices(int n_items, std::span<const double> ratios);

}  // namespace xb::config
