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
inline constexpr int64_t kMaxGridYZ = 65535;      // the hardware limit of gridDim.y and gridDim.z
inline constexpr size_t kMaxSharedBytes = 48 * 1024;  // dynamic shared memory without an opt-in
// Threads of a block that normalises rows (norm, rms_norm, soft_max): several blocks per SM and
// several elements per thread keep enough loads in flight to reach the memory bandwidth.
inline constexpr int kRowBlockSize = 256;
// argsort ranks each element against its whole row (kernels_moe.cu): longer rows go to the CPU.
inline constexpr int64_t kArgsortMaxRow = 8192;
// ssm_scan's d_state and gated_delta_net's head size at most these: a lane keeps its share of a
// state, a thread its column of one, in registers or local memory (kernels_recurrent.cu).
inline constexpr int64_t kMaxScanStateDim = 256;
inline constexpr int64_t kMaxDeltaNetDim = 256;
// Elements of one row a block of an element-wise kernel takes at a time (8 per thread).
inline constexpr int64_t kSegmentLength = 8 * kBlockSize;

// Blocks of `block` threads for n independent items (at least 1, at most kMaxBlocks).
int elementwise_blocks(int64_t n, int block = kBlockSize);
// Blocks for kernels that give each block one row at a time (at least 1, at most kMaxBlocks).
int row_blocks(int64_t rows);
// Threads of a block that reduces a row of `row_length` elements: a power of two from one warp
// up to `cap` (a power of two, at most kMaxBlockSize), no larger than the row needs.
int reduction_block_size(int64_t row_length, int cap = kMaxBlockSize);

// Element-wise kernels work on row segments: up to kSegmentLength consecutive elements of one row
// (dim 0). A block computes a segment's row coordinates once, so an element costs a multiply-add
// instead of the 64-bit divisions of unravelling a flat index.
struct SegmentGrid {
    int64_t row_length = 0;  // ne[0]
    int64_t per_row = 0;     // segments in one row
    int64_t count = 0;       // segments in the tensor
};
SegmentGrid row_segments(int64_t row_length, int64_t rows);
// Blocks for a segment grid (at least 1, at most kMaxBlocks).
int segment_blocks(const SegmentGrid& grid);

// soft_max keeps a row in registers when it fits: `threads` threads (a power of two, one warp up to
// kMaxBlockSize) each hold per_thread accesses of `width` elements (4 with vector loads, else 1).
// Longer rows (fits false) go to the kernel that caches rows in shared memory.
inline constexpr int kSoftMaxMaxPerThread = 8;
struct SoftMaxLaunch {
    bool fits = false;
    int threads = 0;
    int per_thread = 0;  // 1, 2, 4 or 8
};
// The launch for rows of n elements read `width` at a time: the fewest accesses per thread that
// keep the block at 128 threads or fewer, else more threads.
SoftMaxLaunch soft_max_launch(int64_t n, int width);

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
// The launch for `units` warps' work (query rows, times the key splits); head sizes must fit.
WarpLaunch flash_launch(int64_t d, int64_t dv, int64_t units);
// Key splits per query row: a row's keys are cut into this many chunks of consecutive keys, each
// done by its own warp (split-KV, "flash decoding"), then combined. Few query rows (decoding) get
// many splits so that the GPU is full; a chunk keeps at least kFlashMinChunk keys.
inline constexpr int64_t kFlashMinChunk = 16;
inline constexpr int64_t kFlashTargetWarps = 16384;
inline constexpr int64_t kFlashMaxSplits = 1024;  // the combine kernel keeps one weight per split in shared memory
int64_t flash_splits(int64_t rows, int64_t n_kv);
// Scratch for the splits' partial results when splits > 1: per row and split, dv accumulators plus
// the running max and sum, as floats.
size_t flash_partial_bytes(int64_t rows, int64_t splits, int64_t dv);
// Dynamic shared memory of the combine kernel: one weight per split, rounded up to whole 16-byte
// vectors. ptxas reads the weights four at a time (LDS.128), also for the last one to three, so an
// array of exactly `splits` floats is read past its end (compute-sanitizer's memcheck reports it).
size_t flash_combine_shared_bytes(int64_t splits);

// The vector kernel for decoding (few query rows per head): one block of kFlashVecWarps warps per
// (head, group of query rows, key split); K and V read 16 bytes at a time, q and the accumulators
// in registers. Head sizes are template parameters (d == dv, one of flash_vec_head_size's).
inline constexpr int kFlashVecWarps = 4;
inline constexpr int64_t kFlashVecMaxRows = 4;        // query rows per head it takes
inline constexpr int64_t kFlashVecMinChunk = 128;     // keys per block, at least
inline constexpr int64_t kFlashVecChunkStep = 64;     // chunks are multiples of this
inline constexpr int64_t kFlashVecTargetBlocks = 1024;  // enough blocks to fill a large GPU several times
bool flash_vec_head_size(int64_t d);

struct FlashShape {
    int64_t d = 0, dv = 0;        // head sizes of q/k and of v
    int64_t n_q = 0, n_head = 0, n_seq = 0, n_kv = 0;
    bool kv_vectors = false;      // K and V rows 16-byte aligned and contiguous, of a float type
};
struct FlashPlan {
    bool vector = false;          // the vector kernel, else the general one (flash_launch)
    int rows_per_block = 1;       // vector: query rows of one head per block (1, 2 or 4)
    int64_t splits = 1;           // key chunks per query row, combined at the end when more than one
    int64_t chunk = 0;            // keys per chunk
    size_t partial_bytes = 0;     // scratch for the chunks' partial results
};
FlashPlan plan_flash(const FlashShape& shape);

}  // namespace xb::cuda
