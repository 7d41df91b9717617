// Launch sizes of the CUDA kernels (pure host arithmetic, unit-tested without a GPU).
//
// Kernels loop over their work with grid strides, so a grid never needs more blocks than keep
// every SM busy: grids are capped at kMaxBlocks whatever the tensor size, and indices are 64-bit.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xb::cuda {

inline constexpr int kWarpSize = 32;
inline constexpr int kBlockSize = 256;            // threads of element-wise blocks
inline constexpr int kMaxBlockSize = 1024;        // the hardware limit
inline constexpr int kMaxBlocks = 65536;          // grid-stride loops cover the rest
inline constexpr size_t kMaxSharedBytes = 48 * 1024;  // dynamic shared memory without an opt-in

// Blocks of `block` threads for n independent items (at least 1, at most kMaxBlocks).
int elementwise_blocks(int64_t n, int block = kBlockSize);
// Blocks for kernels that give each block one row at a time (at least 1, at most kMaxBlocks).
int row_blocks(int64_t rows);
// Threads of a block that reduces a row of `row_length` elements: a power of two from one warp
// up to kMaxBlockSize, no larger than the row needs.
int reduction_block_size(int64_t row_length);

// flash_attn_ext: one warp per query row, each warp with (d + dv) floats of shared memory.
struct WarpLaunch {
    int warps_per_block = 0;
    int blocks = 0;
    size_t shared_bytes = 0;  // per block
};
// Shared bytes one warp needs for head sizes d (q, k) and dv (v).
size_t flash_bytes_per_warp(int64_t d, int64_t dv);
// True when one warp's shared memory fits a block (the head sizes the kernel can take).
bool flash_head_sizes_fit(int64_t d, int64_t dv);
// The launch for `rows` query rows; head sizes must fit.
WarpLaunch flash_launch(int64_t d, int64_t dv, int64_t rows);

}  // namespace xb::cuda
