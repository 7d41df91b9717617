// The row kernels with AVX-512 (F, BW, VL; compiled with those flags and chosen at run time only on
// CPUs that have them): the dot products and axpy of the one-token mul_mat and flash attention, 16
// elements per step, f16 converted by vcvtph2ps, bf16 by a shift; and the maps whose cost is one
// exponential (exp, sigmoid, silu, gelu_quick, swiglu, soft_max's exp_sum), 16 at a time with the
// AVX2 set's exp polynomial. tanh, gelu, geglu, sincos and the transposition are the AVX2 set's. Like
// the AVX2 file, this one calls no inline function shared with other translation units
// (simd_math_avx2.hpp's functions have internal linkage: this file gets its own copies).
#include <immintrin.h>

#include "cpu_kernels/row_kernels.hpp"
#include "cpu_kernels/row_kernels_impl.hpp"
#include "cpu_kernels/simd_math_avx2.hpp"

namespace xb::cpu_kernels {

namespace {

// Masked forms with an explicit source throughout: the plain conversions, shifts and
// _mm512_reduce_add_ps trip gcc 12's -Wuninitialized inside its own headers.
constexpr __mmask16 kAll = 0xffff;

// Vector constants are made inside the functions (see row_kernels_avx2.cpp).
__m512 splat(float v) { return _mm512_set1_ps(v); }

// exp8's fast path 16 wide: when every |x| <= 87, n = round(x log2e) from the shifted sum's bits,
// e^r - 1 by the same polynomial, 2^n (1 + t) in one fused multiply-add: exp8's bits. Otherwise
// (overflow, underflow, NaN) each half goes through exp8_any. Always inlined: with five users GCC
// stopped inlining it into the maps' loops, a call per vector that cost silu 10%.
template <int Degree>
[[gnu::always_inline]] inline __m512 exp16(__m512 x) {
    const __m512 ax = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff)));
    if (_mm512_cmp_ps_mask(ax, splat(87.0f), _CMP_NLE_UQ) != 0) {
        alignas(64) float v[16];
        _mm512_store_ps(v, x);
        _mm256_store_ps(v, exp8_any<Degree>(_mm256_load_ps(v)));
        _mm256_store_ps(v + 8, exp8_any<Degree>(_mm256_load_ps(v + 8)));
        return _mm512_load_ps(v);
    }
    const __m512 shift = splat(ExpConstants::kShift);
    const __m512 z = _mm512_fmadd_ps(x, splat(ExpConstants::kLog2e), shift);
    const __m512 n = _mm512_sub_ps(z, shift);
    __m512 r = _mm512_fnmadd_ps(n, splat(ExpConstants::kLn2Hi), x);
    r = _mm512_fnmadd_ps(n, splat(ExpConstants::kLn2Lo), r);
    constexpr const float* c = Expm1Coefficients<Degree>::kQ;
    constexpr int terms = sizeof(Expm1Coefficients<Degree>::kQ) / sizeof(float);
    __m512 q = splat(c[0]);
    for (int k = 1; k < terms; ++k) q = _mm512_fmadd_ps(q, r, splat(c[k]));
    const __m512 t = _mm512_fmadd_ps(q, _mm512_mul_ps(r, r), r);
    const __m512i bits = _mm512_mask_slli_epi32(_mm512_setzero_si512(), kAll, _mm512_castps_si512(z), 23);
    const __m512 s = _mm512_castsi512_ps(_mm512_add_epi32(bits, _mm512_castps_si512(splat(1.0f))));
    return _mm512_fmadd_ps(t, s, s);
}

// The vector type of row_kernels_impl.hpp: 16 floats; f16 rows converted by vcvtph2ps, bf16 by a
// shift.
struct Avx512 {
    using T = __m512;
    static constexpr int64_t kWidth = 16;
    static T zero() { return _mm512_setzero_ps(); }
    static T load(const float* p) { return _mm512_loadu_ps(p); }
    static void store(float* p, T v) { _mm512_storeu_ps(p, v); }
    static T set1(float v) { return _mm512_set1_ps(v); }
    static T mul(T a, T b) { return _mm512_mul_ps(a, b); }
    static T fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
    template <DType D>
    static T row(const std::byte* p) {
        if constexpr (D == DType::F32) {
            return _mm512_loadu_ps(reinterpret_cast<const float*>(p));
        } else if constexpr (D == DType::F16) {
            return _mm512_mask_cvtph_ps(_mm512_setzero_ps(), kAll, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
        } else {
            const __m512i zero = _mm512_setzero_si512();
            const __m512i w = _mm512_mask_cvtepu16_epi32(zero, kAll, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
            return _mm512_castsi512_ps(_mm512_mask_slli_epi32(zero, kAll, w, 16));
        }
    }
    static T sub(T a, T b) { return _mm512_sub_ps(a, b); }
    static T exp5(T x) { return exp16<5>(x); }
    // Two accumulators of eight doubles: the low and the high half of each vector, widened from
    // memory with masked conversions (see kAll).
    struct Sums {
        __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
        void add(T e) {
            alignas(64) float halves[16];
            _mm512_store_ps(halves, e);
            lo = _mm512_add_pd(lo, _mm512_mask_cvtps_pd(_mm512_setzero_pd(), 0xff, _mm256_load_ps(halves)));
            hi = _mm512_add_pd(hi, _mm512_mask_cvtps_pd(_mm512_setzero_pd(), 0xff, _mm256_load_ps(halves + 8)));
        }
        double total() const {
            alignas(64) double lanes[8];
            _mm512_store_pd(lanes, _mm512_add_pd(lo, hi));
            return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
        }
    };
    // 8 rows' two sums and q's two vectors in 32 registers.
    static constexpr int kMaxDotRows = 8;
    // The lanes of the two accumulators' sum in one fixed order (every dot_rows walk must agree bit
    // for bit).
    static float sum2(const T* acc) {
        alignas(64) float lanes[16];
        _mm512_store_ps(lanes, _mm512_add_ps(acc[0], acc[1]));
        for (int width = 8; width > 0; width /= 2) {
            for (int l = 0; l < width; ++l) lanes[l] += lanes[l + width];
        }
        return lanes[0];
    }
};

__m512 exp16_6(__m512 x) { return exp16<6>(x); }
__m512 sigmoid16(__m512 x) { return _mm512_div_ps(splat(1.0f), _mm512_add_ps(splat(1.0f), exp16<5>(_mm512_sub_ps(_mm512_setzero_ps(), x)))); }
__m512 silu16(__m512 x) { return _mm512_div_ps(x, _mm512_add_ps(splat(1.0f), exp16<5>(_mm512_sub_ps(_mm512_setzero_ps(), x)))); }
__m512 gelu_quick16(__m512 x) {
    return _mm512_div_ps(x, _mm512_add_ps(splat(1.0f), exp16<5>(_mm512_mul_ps(x, splat(-1.702f)))));
}

}  // namespace

const RowKernels& row_kernels_avx512() {
    static const RowKernels kTable = [] {
        RowKernels t = row_kernels_avx2();
        t.isa = Isa::Avx512;
        constexpr int f32 = static_cast<int>(RowType::F32), f16 = static_cast<int>(RowType::F16),
                      bf16 = static_cast<int>(RowType::BF16);
        t.dot[f32] = &dot<Avx512, DType::F32>;
        t.dot[f16] = &dot<Avx512, DType::F16>;
        t.dot[bf16] = &dot<Avx512, DType::BF16>;
        for (int slot = 0; slot < kDotRowsKinds; ++slot) {
            t.dot_rows[f32][slot] = kDotRows<Avx512, DType::F32>[slot];
            t.dot_rows[f16][slot] = kDotRows<Avx512, DType::F16>[slot];
            t.dot_rows[bf16][slot] = kDotRows<Avx512, DType::BF16>[slot];
        }
        t.axpy[f32] = &axpy<Avx512, DType::F32>;
        t.axpy[f16] = &axpy<Avx512, DType::F16>;
        t.axpy[bf16] = &axpy<Avx512, DType::BF16>;
        t.unary[static_cast<int>(UnaryOp::Exp)] = &map<Avx512, exp16_6>;
        t.unary[static_cast<int>(UnaryOp::Sigmoid)] = &map<Avx512, sigmoid16>;
        t.unary[static_cast<int>(UnaryOp::Silu)] = &map<Avx512, silu16>;
        t.unary[static_cast<int>(UnaryOp::GeluQuick)] = &map<Avx512, gelu_quick16>;
        t.gated[static_cast<int>(GluOp::SwiGlu)] = &gated_map<Avx512, silu16>;
        t.exp_sum = &exp_sum<Avx512>;
        return t;
    }();
    return kTable;
}

}  // namespace xb::cpu_kernels
