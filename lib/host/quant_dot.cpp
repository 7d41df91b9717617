#include "host/quant_dot.hpp"

#include "core/status.hpp"

namespace xb::host {

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

const QuantDot& quant_dot(Isa isa) {
    XB_CHECK_MSG(isa_supported(isa), "quant_dot: this CPU does not run that instruction set");
    switch (isa) {
        case Isa::Scalar: return quant_dot_scalar();
        // No AVX-512 variants yet: AVX-512 CPUs run the AVX2 ones.
        case Isa::Avx2: case Isa::Avx512: return quant_dot_avx2();
    }
    return quant_dot_scalar();
}

const QuantDot& quant_dot() {
    static const QuantDot& best = quant_dot(active_isa());
    return best;
}

}  // namespace xb::host
