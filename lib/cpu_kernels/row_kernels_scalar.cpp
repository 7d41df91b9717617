// The baseline row kernels: plain loops over the elements, converted one at a time.
#include <algorithm>
#include <cmath>

#include "cpu_kernels/row_kernels.hpp"

namespace xb::cpu_kernels {

namespace {

template <DType T>
float dot(const float* q, const std::byte* row, int64_t n) {
    constexpr size_t ts = T == DType::F32 ? 4 : 2;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum += q[i] * load_as_f32(T, row + i * ts);
    return sum;
}

template <DType T, int R>
void dot_rows(const float* q, const std::byte* first, size_t stride, int64_t n, float* out) {
    for (int r = 0; r < R; ++r) out[r] = dot<T>(q, first + r * stride, n);
}

template <DType T>
void axpy(float* acc, float s, const std::byte* row, int64_t n) {
    constexpr size_t ts = T == DType::F32 ? 4 : 2;
    for (int64_t i = 0; i < n; ++i) acc[i] += s * load_as_f32(T, row + i * ts);
}

// In 16 x 16 tiles, so that the strided reads of a tile stay in a few cache lines.
void transpose32(const uint32_t* src, int64_t src_stride, uint32_t* dst, int64_t dst_stride, int64_t rows, int64_t cols) {
    constexpr int64_t kTile = 16;
    for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
        for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
            for (int64_t r = r0; r < std::min(rows, r0 + kTile); ++r) {
                for (int64_t c = c0; c < std::min(cols, c0 + kTile); ++c) dst[r * dst_stride + c] = src[c * src_stride + r];
            }
        }
    }
}

double exp_sum(float* v, int64_t n, float max) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        v[i] = std::exp(v[i] - max);
        sum += static_cast<double>(v[i]);
    }
    return sum;
}

void sincos(const float* x, float* cos_sin, int64_t n) {
    for (int64_t i = 0; i < n; ++i) sincosf(x[i], &cos_sin[2 * i + 1], &cos_sin[2 * i]);
}

}  // namespace

const RowKernels& row_kernels_scalar() {
    static constexpr RowKernels kTable{Isa::Scalar,
                                       {&dot<DType::F32>, &dot<DType::F16>, &dot<DType::BF16>},
                                       {{&dot_rows<DType::F32, 2>, &dot_rows<DType::F32, 4>, &dot_rows<DType::F32, 8>},
                                        {&dot_rows<DType::F16, 2>, &dot_rows<DType::F16, 4>, &dot_rows<DType::F16, 8>},
                                        {&dot_rows<DType::BF16, 2>, &dot_rows<DType::BF16, 4>, &dot_rows<DType::BF16, 8>}},
                                       {&axpy<DType::F32>, &axpy<DType::F16>, &axpy<DType::BF16>},
                                       {},
                                       {},
                                       &transpose32,
                                       &exp_sum,
                                       &sincos};
    return kTable;
}

}  // namespace xb::cpu_kernels
