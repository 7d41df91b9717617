#include "cpu_kernels/quant_dot.hpp"

namespace xb::cpu_kernels {

// As ggml: the super-block formats take one activation scale per 256 values (so integer sums
// run across the whole super-block), the others one per 32.
ActFormat activation_format(DType weights) {
    return blck_size(weights) == kQKK && weights != DType::Q8_K ? ActFormat::Q8K : ActFormat::Q8Sum;
}

size_t activation_row_bytes(DType weights, int64_t n) {
    if (activation_format(weights) == ActFormat::Q8K) return static_cast<size_t>(n / kQKK) * sizeof(BlockQ8_K);
    return static_cast<size_t>(n / kQK) * sizeof(BlockQ8Sum);
}

namespace {
// The AVX-512 table also takes VNNI (vpdpwssd, vpdpbusd) and BMI2 (pdep, pext to take the indices
// and signs apart); AVX-512 CPUs without them (Skylake-X) run the AVX2 table.
const QuantDot& quant_dot_avx512_if_vnni() {
    return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("bmi2") ? quant_dot_avx512() : quant_dot_avx2();
}
}  // namespace

const QuantDot& quant_dot(Isa isa) {
    return table_for_isa(isa, "quant_dot", &quant_dot_scalar, &quant_dot_avx2, &quant_dot_avx512_if_vnni);
}

const QuantDot& quant_dot() {
    static const QuantDot& best = quant_dot(active_isa());
    return best;
}

}  // namespace xb::cpu_kernels
