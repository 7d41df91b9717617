// The baseline row conversions: core/dtype.hpp's element conversions in a loop.
#include "core/dtype.hpp"
#include "core/row_convert.hpp"

namespace xb {

namespace {

void f16_to_f32(const uint16_t* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = xb::f16_to_f32(src[i]);
}
void f32_to_f16(const float* src, uint16_t* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = xb::f32_to_f16(src[i]);
}
void bf16_to_f32(const uint16_t* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = xb::bf16_to_f32(src[i]);
}
void f32_to_bf16(const float* src, uint16_t* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = xb::f32_to_bf16(src[i]);
}

}  // namespace

const RowConverters& row_converters_scalar() {
    static constexpr RowConverters kTable{Isa::Scalar, &f16_to_f32, &f32_to_f16, &bf16_to_f32, &f32_to_bf16};
    return kTable;
}

}  // namespace xb
