// The instruction sets kernels are compiled for, one translation unit each (so that one binary runs
// on any x86-64 CPU), and the best one this CPU runs, chosen at run time: the host kernels' tables
// (lib/cpu_kernels/*_<isa>.cpp) and core's f16/bf16 row conversions (row_convert_<isa>.cpp).
#pragma once

#include <optional>
#include <string>
#include <span>
#include <string_view>

#include "core/status.hpp"

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
// The table of `isa` (which this CPU must support) among one per set, each given as the function
// that returns it: only the chosen set's function is called, since making a set's table may run
// that set's instructions. `what` names the tables in the message for an unsupported set.
template <class Table>
const Table& table_for_isa(Isa isa, const char* what, const Table& (*scalar)(), const Table& (*avx2)(),
                           const Table& (*avx512)()) {
    XB_CHECK_MSG(isa_supported(isa), (std::string(what) + ": this CPU does not run " + isa_name(isa)).c_str());
    switch (isa) {
        case Isa::Scalar: return scalar();
        case Isa::Avx2: return avx2();
        case Isa::Avx512: return avx512();
    }
    return scalar();
}

// The supported instruction set that `name` asks for: itself when supported, else the best one
// below it; nullopt for an unknown name.
std::optional<Isa> isa_from_name(std::string_view name);

}  // namespace xb
