// The AVX2 dot products' table (compiled with -mavx2 -mfma -mf16c; chosen at run time only on CPUs
// that have them): the legacy formats and q4_K-q6_K of quant_dot_core_avx2.hpp, and the newer
// formats' unit dots (quant_dot_units_avx2.cpp).
#include "cpu_kernels/quant_dot_core_avx2.hpp"

namespace xb::cpu_kernels {

namespace {

QuantDot make_table() {
    QuantDot t{};
    t.isa = Isa::Avx2;
    t.dot_q4_K_x8 = dot_q4_K_x8_reference;  // unused: the CPU repacks only with the AVX-512 VNNI table
    set_core_dots(t);
    add_unit_dots_avx2(t);
    return t;
}

}  // namespace

const QuantDot& quant_dot_avx2() {
    static const QuantDot table = make_table();
    return table;
}

}  // namespace xb::cpu_kernels
