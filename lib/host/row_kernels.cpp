#include "host/row_kernels.hpp"

#include "core/status.hpp"

namespace xb::host {

std::optional<RowType> row_type(DType t) {
    switch (t) {
        case DType::F32: return RowType::F32;
        case DType::F16: return RowType::F16;
        case DType::BF16: return RowType::BF16;
        default: return std::nullopt;
    }
}

const RowKernels& row_kernels(Isa isa) {
    XB_CHECK_MSG(isa_supported(isa), "row_kernels: this CPU does not run that instruction set");
    switch (isa) {
        case Isa::Scalar: return row_kernels_scalar();
        // No AVX-512 variants yet: AVX-512 CPUs run the AVX2 ones.
        case Isa::Avx2: case Isa::Avx512: return row_kernels_avx2();
    }
    return row_kernels_scalar();
}

const RowKernels& row_kernels() {
    static const RowKernels& active = row_kernels(active_isa());
    return active;
}

}  // namespace xb::host
