// The instruction sets kernels are compiled for, one translation unit each (so that one binary runs
// on any x86-64 CPU), and the best one this CPU runs, chosen at run time: the host kernels' tables
// (lib/host/*_<isa>.cpp) and core's f16/bf16 row conversions (row_convert_<isa>.cpp).
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace xb {

enum class Isa { Scalar, Avx2, Avx512 };

const char* isa_name(Isa isa);
// True when this CPU can run code compiled for `isa` (Scalar always).
bool isa_supported(Isa isa);
// The best supported one.
Isa best_isa();
// Every supported one, Scalar first (tests run each of them).
std::span<const Isa> supported_isas();
// The instruction set the kernels use: the best supported one, or a lower one forced with the
// environment variable XB_CPU_ISA=scalar|avx2|avx512 (read once; a set this CPU lacks, or an
// unknown name, falls back to the best supported one at or below it, see isa_from_name), so that
// the lower kernels can be tested and timed on a CPU that has better ones.
Isa active_isa();
// The supported instruction set that `name` asks for: itself when supported, else the best one
// below it; nullopt for an unknown name.
std::optional<Isa> isa_from_name(std::string_view name);

}  // namespace xb
