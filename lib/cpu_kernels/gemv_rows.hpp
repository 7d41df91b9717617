// How the one-token products of f32, f16 and bf16 weights walk a matrix's rows, chosen from the
// machine: R rows at a time (row_kernels' dot_rows: every load of the f32 activations serves R
// rows, R weight streams in flight) or one row at a time (dot: one sequential stream per thread).
//
// Pairs, whatever K: the walk the Intel VMs' decode figures were tuned and measured with (Sapphire
// and Emerald Rapids). On an AMD Zen 4 VM (32 KiB L1d) two interleaved streams read at 60-75 % of
// one stream's rate; one row at a time is fastest while the activations take a quarter of the L1d
// (K = 2048: 8 KiB), and 8 rows at a time beyond (K = 4096: +20 %, K = 8192: +50 %), where a
// one-row walk fetches the activations from L2 again for every row: the 1B F16 decode's products
// +10-13 % against one row throughout, in one process on the same memory
// (results/cpu/gemv-rows-2026-12-07-zen4.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace xb::cpu_kernels {

struct GemvWalk {
    int rows = 2;            // rows a step (1, 2, 4 or 8) while K is at most short_k
    int long_rows = 2;       // ... and beyond
    int64_t short_k = 0;

    int rows_for(int64_t k) const { return k <= short_k ? rows : long_rows; }
};

// The walk for a processor of cpuid vendor `vendor` with an L1 data cache of `l1d_bytes` (0:
// unknown, taken as 32 KiB) given XB_GEMV_ROWS's value `forced` (nullptr: not set; 1, 2, 4 or 8
// rows at every K, to measure one walk against another): on AMD processors single rows while K
// f32 activations take at most a quarter of the L1d, 8 rows beyond; pairs elsewhere.
GemvWalk choose_gemv_walk(std::string_view vendor, size_t l1d_bytes, const char* forced);
// The host's (read once).
const GemvWalk& gemv_walk();

// "one-token products by single rows to K = 2048 and 8 rows beyond" (or "by row pairs"), with a
// note when XB_GEMV_ROWS is set (or names none of the counts): the CPU device's description
// carries it.
std::string gemv_walk_description();

}  // namespace xb::cpu_kernels
