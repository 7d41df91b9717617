// The baseline tiles: gcc/clang vector extensions of four floats, which x86-64's SSE2 (or NEON)
// runs on every CPU. Outer-product tiles of 8 rows (two vectors) by 4 columns: 8 accumulators, two
// a vectors and a broadcast in SSE's 16 registers; panels packed element by element.
#include <cstring>

#include "cpu_kernels/matmul_tiles_impl.hpp"

namespace xb::cpu_kernels {

namespace {

struct Vec {
    using T = float __attribute__((vector_size(16)));
    static constexpr int kWidth = 4;
    static T zero() { return T{0.0f, 0.0f, 0.0f, 0.0f}; }
    static T load(const float* p) {
        T v;
        std::memcpy(&v, p, sizeof v);
        return v;
    }
    static void store(float* p, T v) { std::memcpy(p, &v, sizeof v); }
    static T broadcast(const float* p) { return T{*p, *p, *p, *p}; }
    static T add(T a, T b) { return a + b; }
    static T fma(T a, T b, T c) { return a * b + c; }
    static float sum(T v) { return (v[0] + v[1]) + (v[2] + v[3]); }
    static void sum4(T v0, T v1, T v2, T v3, float* out) {
        out[0] = sum(v0);
        out[1] = sum(v1);
        out[2] = sum(v2);
        out[3] = sum(v3);
    }
};

// 16-bit rows converted element by element (core's out-of-line conversion).
template <DType T>
void pack_half(const uint16_t* const* src, int rows, int64_t len, float* out) {
    for (int64_t k = 0; k < len; ++k) {
        for (int i = 0; i < rows; ++i) out[k * rows + i] = load_as_f32(T, reinterpret_cast<const std::byte*>(src[i] + k));
    }
}

}  // namespace

const MatmulTiles& matmul_tiles_scalar() {
    static constexpr MatmulTiles kTable = matmul_impl::make_tiles<Vec, 4, 2, 4>(
        Isa::Scalar, GemmPackers{&matmul_impl::pack_panel_scalar, &pack_half<DType::F16>, &pack_half<DType::BF16>});
    return kTable;
}

}  // namespace xb::cpu_kernels
