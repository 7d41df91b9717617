#include "core/isa.hpp"

#include <cstdlib>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace xb {

const char* isa_name(Isa isa) {
    switch (isa) {
        case Isa::Scalar: return "scalar";
        case Isa::Avx2: return "avx2";
        case Isa::Avx512: return "avx512";
    }
    return "?";
}

#if defined(__x86_64__) || defined(__i386__)
namespace {

// F16C from cpuid directly: clang's __builtin_cpu_supports does not know the name.
bool has_f16c() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}

}  // namespace
#endif

bool isa_supported(Isa isa) {
#if defined(__x86_64__) || defined(__i386__)
    switch (isa) {
        case Isa::Scalar: return true;
        case Isa::Avx2:
            return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
        case Isa::Avx512:
            return isa_supported(Isa::Avx2) && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                   __builtin_cpu_supports("avx512vl");
    }
    return false;
#else
    return isa == Isa::Scalar;
#endif
}

Isa best_isa() {
    for (Isa isa : {Isa::Avx512, Isa::Avx2}) {
        if (isa_supported(isa)) return isa;
    }
    return Isa::Scalar;
}

std::optional<Isa> isa_from_name(std::string_view name) {
    for (Isa isa : {Isa::Avx512, Isa::Avx2, Isa::Scalar}) {
        if (name != isa_name(isa)) continue;
        for (Isa lower : {Isa::Avx512, Isa::Avx2, Isa::Scalar}) {
            if (lower <= isa && isa_supported(lower)) return lower;
        }
    }
    return std::nullopt;
}

Isa active_isa() {
    static const Isa active = [] {
        const char* forced = std::getenv("XB_CPU_ISA");
        const std::optional<Isa> isa = forced != nullptr ? isa_from_name(forced) : std::nullopt;
        return isa ? *isa : best_isa();
    }();
    return active;
}

std::span<const Isa> supported_isas() {
    static const std::vector<Isa> isas = [] {
        std::vector<Isa> out;
        for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
            if (isa_supported(isa)) out.push_back(isa);
        }
        return out;
    }();
    return isas;
}

}  // namespace xb
