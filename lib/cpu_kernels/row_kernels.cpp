#include "cpu_kernels/row_kernels.hpp"

namespace xb::cpu_kernels {

std::optional<RowType> row_type(DType t) {
    switch (t) {
        case DType::F32: return RowType::F32;
        case DType::F16: return RowType::F16;
        case DType::BF16: return RowType::BF16;
        default: return std::nullopt;
    }
}

const RowKernels& row_kernels(Isa isa) {
    return table_for_isa(isa, "row_kernels", &row_kernels_scalar, &row_kernels_avx2, &row_kernels_avx512);
}

const RowKernels& row_kernels() {
    static const RowKernels& active = row_kernels(active_isa());
    return active;
}

}  // namespace xb::cpu_kernels
