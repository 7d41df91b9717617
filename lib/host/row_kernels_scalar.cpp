// The baseline row kernels: plain loops over the elements, converted one at a time.
#include "host/row_kernels.hpp"

namespace xb::host {

namespace {

template <DType T>
float dot(const float* q, const std::byte* row, int64_t n) {
    constexpr size_t ts = T == DType::F32 ? 4 : 2;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum += q[i] * load_as_f32(T, row + i * ts);
    return sum;
}

template <DType T>
void axpy(float* acc, float s, const std::byte* row, int64_t n) {
    constexpr size_t ts = T == DType::F32 ? 4 : 2;
    for (int64_t i = 0; i < n; ++i) acc[i] += s * load_as_f32(T, row + i * ts);
}

}  // namespace

const RowKernels& row_kernels_scalar() {
    static constexpr RowKernels kTable{Isa::Scalar,
                                       {&dot<DType::F32>, &dot<DType::F16>, &dot<DType::BF16>},
                                       {&axpy<DType::F32>, &axpy<DType::F16>, &axpy<DType::BF16>},
                                       {}};
    return kTable;
}

}  // namespace xb::host
