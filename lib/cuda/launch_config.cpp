#include "cuda/launch_config.hpp"

#include <algorithm>

namespace xb::cuda {

namespace {
int clamp_blocks(int64_t blocks) { return static_cast<int>(std::clamp<int64_t>(blocks, 1, kMaxBlocks)); }
}  // namespace

int elementwise_blocks(int64_t n, int block) {
    if (n <= 0 || block <= 0) return 1;
    return clamp_blocks(n / block + (n % block != 0 ? 1 : 0));  // no n + block - 1: it overflows near INT64_MAX
}

int row_blocks(int64_t rows) { return clamp_blocks(rows); }

int reduction_block_size(int64_t row_length) {
    int threads = kWarpSize;
    while (threads < kMaxBlockSize && threads < row_length) threads *= 2;
    return threads;
}

size_t flash_bytes_per_warp(int64_t d, int64_t dv) {
    if (d < 0 || dv < 0) return 0;
    return static_cast<size_t>(d + dv) * sizeof(float);
}

bool flash_head_sizes_fit(int64_t d, int64_t dv) {
    return d >= 0 && dv >= 0 && flash_bytes_per_warp(d, dv) <= kMaxSharedBytes;
}

WarpLaunch flash_launch(int64_t d, int64_t dv, int64_t rows) {
    constexpr int kMaxWarps = 4;
    const size_t per_warp = std::max<size_t>(flash_bytes_per_warp(d, dv), sizeof(float));
    WarpLaunch launch;
    launch.warps_per_block = static_cast<int>(std::clamp<size_t>(kMaxSharedBytes / per_warp, 1, kMaxWarps));
    launch.blocks = elementwise_blocks(rows, launch.warps_per_block);
    launch.shared_bytes = per_warp * static_cast<size_t>(launch.warps_per_block);
    return launch;
}

}  // namespace xb::cuda
