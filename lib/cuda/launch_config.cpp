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

int reduction_block_size(int64_t row_length, int cap) {
    cap = std::clamp(cap, kWarpSize, kMaxBlockSize);
    int threads = kWarpSize;
    while (threads < cap && threads < row_length) threads *= 2;
    return threads;
}

SegmentGrid row_segments(int64_t row_length, int64_t rows) {
    SegmentGrid g;
    if (row_length <= 0 || rows <= 0) return g;
    g.row_length = row_length;
    g.per_row = row_length / kSegmentLength + (row_length % kSegmentLength != 0 ? 1 : 0);
    g.count = g.per_row * rows;
    return g;
}

int segment_blocks(const SegmentGrid& grid) { return clamp_blocks(grid.count); }

int64_t flash_splits(int64_t rows, int64_t n_kv) {
    if (rows <= 0 || n_kv <= kFlashMinChunk) return 1;
    const int64_t by_keys = n_kv / kFlashMinChunk;                    // chunks of at least kFlashMinChunk keys
    const int64_t by_warps = std::max<int64_t>(1, kFlashTargetWarps / rows);  // no more warps than fill the GPU
    return std::clamp<int64_t>(std::min(by_keys, by_warps), 1, kFlashMaxSplits);
}

SoftMaxLaunch soft_max_launch(int64_t n, int width) {
    SoftMaxLaunch l;
    if (n <= 0 || width <= 0) return l;
    constexpr int kPreferredThreads = 128;
    const int64_t accesses = n / width + (n % width != 0 ? 1 : 0);
    for (int per = 1; per <= kSoftMaxMaxPerThread; per *= 2) {
        const int64_t threads = accesses / per + (accesses % per != 0 ? 1 : 0);
        if (threads > kPreferredThreads && per < kSoftMaxMaxPerThread) continue;
        l.threads = reduction_block_size(threads);
        l.per_thread = per;
        l.fits = static_cast<int64_t>(l.threads) * per >= accesses;
        return l;
    }
    return l;
}

bool flash_vec_head_size(int64_t d) {
    return d == 64 || d == 80 || d == 96 || d == 112 || d == 128 || d == 256;
}

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }
}  // namespace

FlashPlan plan_flash(const FlashShape& s) {
    FlashPlan p;
    const int64_t rows = s.n_q * s.n_head * s.n_seq;
    if (rows <= 0 || s.n_kv <= 0) return p;
    p.vector = s.kv_vectors && s.d == s.dv && flash_vec_head_size(s.d) && s.n_q <= kFlashVecMaxRows;
    if (!p.vector) {
        p.splits = flash_splits(rows, s.n_kv);
        p.chunk = ceil_div(s.n_kv, p.splits);
        p.partial_bytes = flash_partial_bytes(rows, p.splits, s.dv);
        return p;
    }
    p.rows_per_block = s.n_q == 1 ? 1 : s.n_q == 2 ? 2 : 4;
    const int64_t blocks = s.n_head * s.n_seq * ceil_div(s.n_q, p.rows_per_block);
    const int64_t by_keys = std::max<int64_t>(1, s.n_kv / kFlashVecMinChunk);
    const int64_t wanted = std::clamp<int64_t>(ceil_div(kFlashVecTargetBlocks, blocks), 1, std::min(by_keys, kFlashMaxSplits));
    p.chunk = ceil_div(ceil_div(s.n_kv, wanted), kFlashVecChunkStep) * kFlashVecChunkStep;
    p.splits = ceil_div(s.n_kv, p.chunk);
    p.partial_bytes = flash_partial_bytes(rows, p.splits, s.dv);
    return p;
}

size_t flash_partial_bytes(int64_t rows, int64_t splits, int64_t dv) {
    if (splits <= 1) return 0;
    return static_cast<size_t>(rows) * static_cast<size_t>(splits) * static_cast<size_t>(dv + 2) * sizeof(float);
}

size_t flash_combine_shared_bytes(int64_t splits) {
    constexpr int64_t kFloatsPerVector = 4;
    if (splits <= 0) return 0;
    return static_cast<size_t>(ceil_div(splits, kFloatsPerVector) * kFloatsPerVector) * sizeof(float);
}

size_t flash_bytes_per_warp(int64_t d, int64_t dv) {
    if (d < 0 || dv < 0) return 0;
    return static_cast<size_t>(d + dv) * sizeof(float);
}

bool flash_head_sizes_fit(int64_t d, int64_t dv) {
    return d >= 0 && dv >= 0 && flash_bytes_per_warp(d, dv) <= kMaxSharedBytes;
}

WarpLaunch flash_launch(int64_t d, int64_t dv, int64_t units) {
    constexpr int kMaxWarps = 4;
    const size_t per_warp = std::max<size_t>(flash_bytes_per_warp(d, dv), sizeof(float));
    WarpLaunch launch;
    launch.warps_per_block = static_cast<int>(std::clamp<size_t>(kMaxSharedBytes / per_warp, 1, kMaxWarps));
    launch.blocks = elementwise_blocks(units, launch.warps_per_block);
    launch.shared_bytes = per_warp * static_cast<size_t>(launch.warps_per_block);
    return launch;
}

}  // namespace xb::cuda
