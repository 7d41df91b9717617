// The row loops compiled for AVX2 + FMA (this file only; see lib/CMakeLists.txt), with rope's
// normal mode written out: GCC vectorises the generic loop with de-interleaving shuffles.
#include <immintrin.h>

#include "cpu_kernels/row_loops_impl.hpp"

namespace xb::cpu_kernels {

namespace {

// Pairs (x0, x1) with (cos, sin) interleaved the same way: y = x * (c, c) + (x1, x0) * (-s, s),
// i.e. y0 = x0 c - x1 s and y1 = x1 c + x0 s with the same roundings as the generic loop.
void rope_normal_avx2(const float* x, float* y, const float* cache, int64_t n_dims) {
    const __m256 sign = _mm256_setr_ps(-0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f);
    int64_t i = 0;
    for (; i + 8 <= n_dims; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        const __m256 cs = _mm256_loadu_ps(cache + i);
        const __m256 a = _mm256_mul_ps(v, _mm256_moveldup_ps(cs));
        const __m256 b = _mm256_mul_ps(_mm256_permute_ps(v, 0xb1), _mm256_movehdup_ps(cs));
        _mm256_storeu_ps(y + i, _mm256_add_ps(a, _mm256_xor_ps(b, sign)));
    }
    if (i < n_dims) rope_normal_span(x + i, y + i, cache + i, n_dims - i);
}

}  // namespace

const RowLoops& row_loops_avx2() {
    static constexpr RowLoops kTable = [] {
        RowLoops t = make_row_loops(Isa::Avx2);
        t.rope_normal = &rope_normal_avx2;
        return t;
    }();
    return kTable;
}

}  // namespace xb::cpu_kernels
