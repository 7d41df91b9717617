// Software prefetch of the weight stream in the one-token products (quantized row dots, the
// f32/f16/bf16 dot2 of the row kernels) and of the int8 tiles' panel decoding.
//
// A one-token product reads each weight byte once, so it can run at the memory's speed only if the
// loads of later blocks are in flight while earlier ones are multiplied. The hardware prefetchers
// alone do not keep enough of them in flight: on the 2-vCPU Sapphire Rapids VM the q4_K, q6_K and
// q8_0 products read 9-11 GB/s from memory with two threads while the same kernels reach 16-25 GB/s
// on matrices in the cache, because each core waited out its misses and then computed, rather than
// both at once. Asking for the block a few KiB ahead as each block is multiplied overlaps the two:
// 15-21 GB/s from memory (f16 15-16 -> 20-24 GB/s), and a Llama 3.2 1B Q4_K_M decode step from
// 13.6 to 22-25 tokens/s (results/cpu/vs-llama-cpp-*.md).
//
// No ISA-specific instruction here (prefetch is baseline x86-64 and a no-op elsewhere), so the
// instruction-set files may share it; always inlined, so none keeps an out-of-line copy.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xb::cpu_kernels {

// How far ahead of the block being multiplied a row product asks for weight bytes. Rows of a
// matrix are contiguous and each thread walks its rows in order, so near a row's end this reaches
// into the next rows, which are the thread's next reads. 2-8 KiB measured alike; the middle is
// taken. Prefetching never faults, so an address past the matrix costs one dropped request.
inline constexpr size_t kWeightPrefetchDistance = 4096;
// Further ahead, a request into L2 only (one line per block): by the time the request into L1
// comes for those bytes they are on their way from memory or already in L2. With the L1 requests
// alone, q2_K, q4_K-q6_K, tq1_0, tq2_0 and most IQ formats read 8-20% fewer bytes per second from
// memory than with both, on the 2-vCPU Sapphire Rapids VM (results/cpu/stream-vs-memcpy-2026-11-27.md).
inline constexpr size_t kWeightPrefetchL2Distance = 8192;

// Asks for the cache lines that `bytes` bytes at `address` end in (for reading, into every cache
// level): the line of every 64th byte from the 64th, and of the last. In a stream of contiguous
// blocks that is every line, each asked for once or a few times, with one request per block of 64
// bytes or less (q4_0's 18 bytes would otherwise pay two).
[[gnu::always_inline]] inline void prefetch_lines(uintptr_t address, size_t bytes) {
    for (size_t at = 63; at + 1 < bytes; at += 64) __builtin_prefetch(reinterpret_cast<const void*>(address + at), 0, 3);
    __builtin_prefetch(reinterpret_cast<const void*>(address + bytes - 1), 0, 3);
}

// The one-token products' request for their weight stream, as each block is multiplied: the
// block's lines kWeightPrefetchDistance ahead into every cache level, and its last line
// kWeightPrefetchL2Distance ahead into L2.
template <typename Block>
[[gnu::always_inline]] inline void prefetch_weight_stream(const Block* block) {
    const auto at = reinterpret_cast<uintptr_t>(block);
    __builtin_prefetch(reinterpret_cast<const void*>(at + kWeightPrefetchL2Distance + sizeof(Block) - 1), 0, 2);
    prefetch_lines(at + kWeightPrefetchDistance, sizeof(Block));
}

// Asks for the block-sized bytes `distance` bytes past `block` (an integer address: the bytes may
// lie past the end of the object, which a pointer may not point to).
template <typename Block>
[[gnu::always_inline]] inline void prefetch_block_ahead(const Block* block, size_t distance = kWeightPrefetchDistance) {
    prefetch_lines(reinterpret_cast<uintptr_t>(block) + distance, sizeof(Block));
}

}  // namespace xb::cpu_kernels
