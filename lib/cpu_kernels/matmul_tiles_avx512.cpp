// The tiles with AVX-512F (compiled with -mavx512f -mavx512bw -mavx512vl -mfma; chosen at run
// time only on CPUs that have them): 16 floats per register. Dot tiles of 4 rows by 6 columns
// (24 accumulators, 6 b vectors and one a vector in the 32 zmm registers); outer-product tiles of
// 32 rows (two vectors) by 8 columns (16 accumulators, two a vectors and a broadcast; 12 columns
// padded a 64-token prompt to 72).
// Panels are packed with AVX2's 8 x 8 transposes.
#include <immintrin.h>

#include "cpu_kernels/matmul_pack_avx2.hpp"

namespace xb::cpu_kernels {

namespace {

struct Vec {
    using T = __m512;
    static constexpr int kWidth = 16;
    static T zero() { return _mm512_setzero_ps(); }
    static T load(const float* p) { return _mm512_loadu_ps(p); }
    static void store(float* p, T v) { _mm512_storeu_ps(p, v); }
    static T broadcast(const float* p) { return _mm512_set1_ps(*p); }
    static T add(T a, T b) { return _mm512_add_ps(a, b); }
    static T fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
    // out[i] = sum of the lanes of v_i. Masked forms with an explicit source throughout: the plain
    // shuffles (and _mm512_reduce_add_ps) trip gcc 12's -Wuninitialized inside its own headers.
    static void sum4(T v0, T v1, T v2, T v3, float* out) {
        constexpr __mmask16 kAll = 0xffff;
        // 128-bit quarters: p01 = [v0 q0+q2, v0 q1+q3, v1 q0+q2, v1 q1+q3], p23 likewise.
        const T p01 = _mm512_add_ps(_mm512_mask_shuffle_f32x4(v0, kAll, v0, v1, 0x44),
                                    _mm512_mask_shuffle_f32x4(v0, kAll, v0, v1, 0xee));
        const T p23 = _mm512_add_ps(_mm512_mask_shuffle_f32x4(v2, kAll, v2, v3, 0x44),
                                    _mm512_mask_shuffle_f32x4(v2, kAll, v2, v3, 0xee));
        // Quarter i now holds four partial sums of v_i.
        T q = _mm512_add_ps(_mm512_mask_shuffle_f32x4(p01, kAll, p01, p23, 0x88),
                            _mm512_mask_shuffle_f32x4(p01, kAll, p01, p23, 0xdd));
        q = _mm512_add_ps(q, _mm512_mask_permute_ps(q, kAll, q, 0x4e));
        q = _mm512_add_ps(q, _mm512_mask_permute_ps(q, kAll, q, 0xb1));
        // Every lane of quarter i is the sum of v_i: keep lanes 0, 4, 8, 12.
        _mm512_mask_compressstoreu_ps(out, 0x1111, q);
    }
};

}  // namespace

const MatmulTiles& matmul_tiles_avx512() {
    static constexpr MatmulTiles kTable = matmul_impl::make_tiles<Vec, 6, 2, 8>(Isa::Avx512, kAvxPackers);
    return kTable;
}

}  // namespace xb::cpu_kernels
