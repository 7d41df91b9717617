// The row kernels with AVX2, FMA and F16C (compiled with -mavx2 -mfma -mf16c; chosen at run time
// only on CPUs that have them): 8 elements per step, f16 converted by vcvtph2ps, bf16 by a shift.
// Tails convert with the same instructions one element at a time: this file calls no inline
// function shared with other translation units (not even std::min), whose AVX2 copy the linker
// could otherwise keep for the whole program.
#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "cpu_kernels/row_kernels.hpp"
#include "cpu_kernels/row_kernels_impl.hpp"
#include "cpu_kernels/simd_math_avx2.hpp"

namespace xb::cpu_kernels {

namespace {

// The vector type of row_kernels_impl.hpp: 8 floats; f16 rows converted by vcvtph2ps, bf16 by a
// shift.
struct Avx2 {
    using T = __m256;
    static constexpr int64_t kWidth = 8;
    static T zero() { return _mm256_setzero_ps(); }
    static T load(const float* p) { return _mm256_loadu_ps(p); }
    static void store(float* p, T v) { _mm256_storeu_ps(p, v); }
    static T set1(float v) { return _mm256_set1_ps(v); }
    static T mul(T a, T b) { return _mm256_mul_ps(a, b); }
    static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
    template <DType D>
    static T row(const std::byte* p) {
        if constexpr (D == DType::F32) {
            return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
        } else if constexpr (D == DType::F16) {
            return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        } else {
            const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
            return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
        }
    }
    static T sub(T a, T b) { return _mm256_sub_ps(a, b); }
    static T exp5(T x) { return exp8<5>(x); }
    // Two accumulators of four doubles: the low and the high half of each vector.
    struct Sums {
        __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
        void add(T e) {
            lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
            hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
        }
        double total() const {
            double lanes[4];
            _mm256_storeu_pd(lanes, _mm256_add_pd(lo, hi));
            return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
        }
    };
    // 4 rows' two sums, q's two vectors and a converted row in 16 registers.
    static constexpr int kMaxDotRows = 4;
    static float sum2(const T* acc) {
        const __m256 v = _mm256_add_ps(acc[0], acc[1]);
        __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        s = _mm_add_ss(s, _mm_movehdup_ps(s));
        return _mm_cvtss_f32(s);
    }
};

// --- unary maps -------------------------------------------------------------------------------

// Eight angles at a time through sincos8 when all are within its range (|x| <= 8192), else libm's
// sincosf for those eight; the tail from a zero-padded copy. cos and sin are interleaved on store.
void sincos(const float* x, float* cos_sin, int64_t n) {
    const auto eight = [](const float* in, float* out) {
        const __m256 v = _mm256_loadu_ps(in);
        const __m256 in_range = _mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), v), _mm256_set1_ps(8192.0f),
                                              _CMP_LE_OQ);
        if (_mm256_movemask_ps(in_range) != 0xff) {  // large, infinite or NaN
            for (int k = 0; k < 8; ++k) sincosf(in[k], &out[2 * k + 1], &out[2 * k]);
            return;
        }
        __m256 s, c;
        sincos8(v, &s, &c);
        const __m256 lo = _mm256_unpacklo_ps(c, s);  // c0 s0 c1 s1 | c4 s4 c5 s5
        const __m256 hi = _mm256_unpackhi_ps(c, s);  // c2 s2 c3 s3 | c6 s6 c7 s7
        _mm256_storeu_ps(out, _mm256_permute2f128_ps(lo, hi, 0x20));
        _mm256_storeu_ps(out + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
    };
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) eight(x + i, cos_sin + 2 * i);
    if (i < n) {
        float in[8] = {}, out[16];
        for (int64_t k = 0; i + k < n; ++k) in[k] = x[i + k];
        eight(in, out);
        for (int64_t k = 0; i + k < n; ++k) {
            cos_sin[2 * (i + k)] = out[2 * k];
            cos_sin[2 * (i + k) + 1] = out[2 * k + 1];
        }
    }
}

// Vector constants are made inside the functions: a namespace-scope __m256 could be initialised at
// program start, running AVX on CPUs that lack it.
__m256 one8() { return _mm256_set1_ps(1.0f); }

__m256 sigmoid8(__m256 x) { return _mm256_div_ps(one8(), _mm256_add_ps(one8(), exp8<5>(_mm256_sub_ps(_mm256_setzero_ps(), x)))); }
__m256 silu8(__m256 x) { return _mm256_div_ps(x, _mm256_add_ps(one8(), exp8<5>(_mm256_sub_ps(_mm256_setzero_ps(), x)))); }
__m256 gelu_quick8(__m256 x) {
    return _mm256_div_ps(x, _mm256_add_ps(one8(), exp8<5>(_mm256_mul_ps(x, _mm256_set1_ps(-1.702f)))));
}
// 0.5 x (1 + tanh(sqrt(2/pi) x (1 + 0.044715 x^2))), as core/op_math.hpp's gelu_f32.
__m256 gelu8(__m256 x) {
    const __m256 inner = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.79788456080286535587989211986876f), x),
                                       _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(0.044715f), x), x, one8()));
    return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), _mm256_add_ps(one8(), tanh8(inner)));
}

// --- transposition --------------------------------------------------------------------------------

// An 8 x 8 block in registers: eight rows of src loaded, transposed by unpack, shuffle and lane
// permute, stored as eight rows of dst.
void transpose8x8(const float* s, int64_t ss, float* d, int64_t ds) {
    __m256 r[8];
    for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(s + k * ss);
    __m256 t[8];
    for (int k = 0; k < 4; ++k) {
        t[2 * k] = _mm256_unpacklo_ps(r[2 * k], r[2 * k + 1]);
        t[2 * k + 1] = _mm256_unpackhi_ps(r[2 * k], r[2 * k + 1]);
    }
    __m256 u[8];
    for (int k = 0; k < 2; ++k) {
        u[4 * k + 0] = _mm256_shuffle_ps(t[4 * k], t[4 * k + 2], 0x44);
        u[4 * k + 1] = _mm256_shuffle_ps(t[4 * k], t[4 * k + 2], 0xee);
        u[4 * k + 2] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0x44);
        u[4 * k + 3] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0xee);
    }
    for (int k = 0; k < 4; ++k) {
        _mm256_storeu_ps(d + k * ds, _mm256_permute2f128_ps(u[k], u[k + 4], 0x20));
        _mm256_storeu_ps(d + (k + 4) * ds, _mm256_permute2f128_ps(u[k], u[k + 4], 0x31));
    }
}

// Bands of 32 rows of dst: for each group of 8 columns, four blocks down the band, whose src rows
// stay in L1 across the band. Edges that do not fill a block go element by element.
void transpose32(const uint32_t* src, int64_t src_stride, uint32_t* dst, int64_t dst_stride, int64_t rows, int64_t cols) {
    constexpr int64_t kBand = 32;
    const auto* s = reinterpret_cast<const float*>(src);
    auto* d = reinterpret_cast<float*>(dst);
    const int64_t rows8 = rows / 8 * 8;
    const int64_t cols8 = cols / 8 * 8;
    for (int64_t b = 0; b < rows8; b += kBand) {
        const int64_t band_end = rows8 < b + kBand ? rows8 : b + kBand;
        for (int64_t c = 0; c < cols8; c += 8) {
            for (int64_t r = b; r < band_end; r += 8) transpose8x8(s + c * src_stride + r, src_stride, d + r * dst_stride + c, dst_stride);
        }
    }
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = r < rows8 ? cols8 : 0; c < cols; ++c) dst[r * dst_stride + c] = src[c * src_stride + r];
    }
}

}  // namespace

const RowKernels& row_kernels_avx2() {
    static constexpr RowKernels kTable = [] {
        RowKernels t{Isa::Avx2,
                     {&dot<Avx2, DType::F32>, &dot<Avx2, DType::F16>, &dot<Avx2, DType::BF16>},
                     {{kDotRows<Avx2, DType::F32>[0], kDotRows<Avx2, DType::F32>[1], kDotRows<Avx2, DType::F32>[2]},
                      {kDotRows<Avx2, DType::F16>[0], kDotRows<Avx2, DType::F16>[1], kDotRows<Avx2, DType::F16>[2]},
                      {kDotRows<Avx2, DType::BF16>[0], kDotRows<Avx2, DType::BF16>[1], kDotRows<Avx2, DType::BF16>[2]}},
                     {&axpy<Avx2, DType::F32>, &axpy<Avx2, DType::F16>, &axpy<Avx2, DType::BF16>},
                     {},
                     {},
                     &transpose32,
                     &exp_sum<Avx2>,
                     &sincos};
        t.unary[static_cast<int>(UnaryOp::Gelu)] = &map<Avx2, gelu8>;
        t.unary[static_cast<int>(UnaryOp::GeluQuick)] = &map<Avx2, gelu_quick8>;
        t.unary[static_cast<int>(UnaryOp::Silu)] = &map<Avx2, silu8>;
        t.unary[static_cast<int>(UnaryOp::Tanh)] = &map<Avx2, tanh8>;
        t.unary[static_cast<int>(UnaryOp::Sigmoid)] = &map<Avx2, sigmoid8>;
        t.unary[static_cast<int>(UnaryOp::Exp)] = &map<Avx2, exp8<6>>;
        t.gated[static_cast<int>(GluOp::SwiGlu)] = &gated_map<Avx2, silu8>;
        t.gated[static_cast<int>(GluOp::GeGlu)] = &gated_map<Avx2, gelu8>;
        return t;
    }();
    return kTable;
}

}  // namespace xb::cpu_kernels
