// The instruction sets host kernels are compiled for, one translation unit each (so that one binary
// runs on any x86-64 CPU), and the best one this CPU runs, chosen at run time.
#pragma once

#include <span>

namespace xb::host {

enum class Isa { Scalar, Avx2, Avx512 };

const char* isa_name(Isa isa);
// True when this CPU can run code compiled for `isa` (Scalar always).
bool isa_supported(Isa isa);
// The best supported one.
Isa best_isa();
// Every supported one, Scalar first (tests run each of them).
std::span<const Isa> supported_isas();

}  // namespace xb::host
