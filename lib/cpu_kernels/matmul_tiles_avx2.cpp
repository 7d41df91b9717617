// The tiles with AVX2 and FMA (compiled with -mavx2 -mfma; chosen at run time only on CPUs that
// have them): 8 floats per register. Both kernels keep 12 accumulators in the 16 ymm registers:
// dot tiles of 4 rows by 3 columns (plus 3 b vectors and one a vector), outer-product tiles of
// 16 rows (two vectors) by 6 columns (plus the two a vectors and one broadcast).
#include <immintrin.h>

#include "cpu_kernels/matmul_pack_avx2.hpp"

namespace xb::cpu_kernels {

namespace {

struct Vec {
    using T = __m256;
    static constexpr int kWidth = 8;
    static T zero() { return _mm256_setzero_ps(); }
    static T load(const float* p) { return _mm256_loadu_ps(p); }
    static void store(float* p, T v) { _mm256_storeu_ps(p, v); }
    static T broadcast(const float* p) { return _mm256_broadcast_ss(p); }
    static T add(T a, T b) { return _mm256_add_ps(a, b); }
    static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
    static void sum4(T v0, T v1, T v2, T v3, float* out) {
        // Each 128-bit half ends as [v0, v1, v2, v3] partial sums; add the halves.
        const T h = _mm256_hadd_ps(_mm256_hadd_ps(v0, v1), _mm256_hadd_ps(v2, v3));
        _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
    }
};

}  // namespace

const MatmulTiles& matmul_tiles_avx2() {
    static constexpr MatmulTiles kTable = matmul_impl::make_tiles<Vec, 3, 2, 6>(Isa::Avx2, kAvxPackers);
    return kTable;
}

}  // namespace xb::cpu_kernels
