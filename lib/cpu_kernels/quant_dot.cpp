#include "cpu_kernels/quant_dot.hpp"

namespace xb::cpu_kernels {

ActFormat activation_format(DType weights) {
    switch (weights) {
        case DType::Q4_K: case DType::Q5_K: case DType::Q6_K: return ActFormat::Q8K;
        default: return ActFormat::Q8Sum;
    }
}

size_t activation_row_bytes(DType weights, int64_t n) {
    if (activation_format(weights) == ActFormat::Q8K) return static_cast<size_t>(n / kQKK) * sizeof(BlockQ8_K);
    return static_cast<size_t>(n / kQK) * sizeof(BlockQ8Sum);
}

// No AVX-512 variants yet: AVX-512 CPUs run the AVX2 ones.
const QuantDot& quant_dot(Isa isa) {
    return table_for_isa(isa, "quant_dot", &quant_dot_scalar, &quant_dot_avx2, &quant_dot_avx2);
}

const QuantDot& quant_dot() {
    static const QuantDot& best = quant_dot(active_isa());
    return best;
}

}  // namespace xb::cpu_kernels
