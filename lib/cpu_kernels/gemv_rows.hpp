// How the one-token products of f32, f16 and bf16 weights walk a matrix's rows, chosen from the
// machine: in pairs (row_kernels' dot2: every load of the activations serves two rows) or one row
// at a time (dot: one sequential stream of weights per thread).
//
// Pairs read two streams 4-16 KiB apart at once: the walk the Intel VMs' decode figures were tuned
// and measured with (Sapphire and Emerald Rapids). On an AMD Zen 4 VM two interleaved rows of 4 KiB
// read at 60 % of one stream's rate (15.6 against 26 GB/s on one thread), and the Llama 3.2 1B F16
// and BF16 decodes ran 13-16 % faster one row at a time in alternating runs
// (results/cpu/vs-llama-cpp-2026-12-07-zen4.md).
#pragma once

#include <string>
#include <string_view>

namespace xb::cpu_kernels {

enum class GemvRows { Pairs, Single };

// The walk for a processor of cpuid vendor `vendor` given XB_GEMV_ROWS's value `forced` (nullptr:
// not set): "1" single rows, "2" pairs, for measuring one against the other; otherwise single rows
// on AMD processors and pairs elsewhere.
GemvRows choose_gemv_rows(std::string_view vendor, const char* forced);
// The host's (read once).
GemvRows gemv_rows();

// "one-token products by row pairs" or "... by single rows", with a note when XB_GEMV_ROWS is set
// (or names neither): the CPU device's description carries it.
std::string gemv_rows_description();

}  // namespace xb::cpu_kernels
