// exp, tanh, and sin with cos of eight floats with AVX2 + FMA, for the AVX2 translation units only (each gets its
// own internal copy: nothing here has external linkage, so no AVX2 code can leak into callers
// compiled for the baseline).
//
// exp: x = n ln2 + r with |r| <= ln2 / 2 (ln2 split in two parts so that n ln2 is exact), e^r - 1 by a
// polynomial of degree 6 (exp8<6>, within 1.03 ulp) or 5 (exp8<5>, 2.3 ulp, cheaper), then 2^n put
// into the exponent bits. Results under FLT_MIN flush to 0; x above
// ln(FLT_MAX) gives +inf. tanh: x + x^3 P(x^2) on |x| < 0.625 (no cancellation near 0), else
// sign(x) (1 - 2 / (e^{2|x|} + 1)). Measured errors are in tests/cpu_kernels/test_row_kernels.cpp and README.
#pragma once

#include <immintrin.h>

namespace xb::cpu_kernels {
namespace {

// The constants of the range reduction (x = n ln2 + r) and of e^r - 1 = r + r^2 q(r), shared with
// the AVX-512 set's 16-wide exp (row_kernels_avx512.cpp).
struct ExpConstants {
    static constexpr float kShift = 12582912.0f;  // 1.5 * 2^23
    static constexpr float kLog2e = 1.44269504088896341f;
    static constexpr float kLn2Hi = 0.693359375f;  // 8 significant bits: n * kLn2Hi is exact
    static constexpr float kLn2Lo = -2.12194440e-4f;
};

// q's coefficients, highest degree first: fits of the relative error (Lawson's iteration towards
// minimax, coefficients rounded to float). Degree 6: 2^-28 before rounding, exp within 1.03 ulp;
// degree 5: 2^-23.1, exp within 2.3 ulp and one fused multiply-add less, which is 10% of silu
// (README: Numerics lists which op uses which).
template <int Degree>
struct Expm1Coefficients;
template <>
struct Expm1Coefficients<6> {
    static constexpr float kQ[] = {0x1.6bd908p-10f, 0x1.1239b0p-7f, 0x1.555682p-5f, 0x1.555492p-3f, 0x1.fffffep-2f};
};
template <>
struct Expm1Coefficients<5> {
    static constexpr float kQ[] = {0x1.106554p-7f, 0x1.5727a4p-5f, 0x1.5557aap-3f, 0x1.fffe04p-2f};
};

// x = n ln2 + r: n = round(x log2e) by adding 1.5 * 2^23 (the sum's low mantissa bits then hold n,
// so 2^n needs no float-to-int conversion), r with ln2 in two parts so that n ln2 is exact.
// Returns r; *z_out is the shifted sum whose bits carry n.
inline __m256 exp8_reduce(__m256 x, __m256* z_out) {
    const __m256 kShift = _mm256_set1_ps(ExpConstants::kShift);
    const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(ExpConstants::kLog2e), kShift);
    const __m256 n = _mm256_sub_ps(z, kShift);
    const __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(ExpConstants::kLn2Hi), x);
    *z_out = z;
    return _mm256_fnmadd_ps(n, _mm256_set1_ps(ExpConstants::kLn2Lo), r);
}

// e^r - 1 on |r| <= ln2 / 2 as r + r^2 q(r), q of degree Degree - 2 (Horner).
template <int Degree>
inline __m256 expm1_reduced8(__m256 r) {
    static_assert(Degree == 5 || Degree == 6);
    constexpr const float* c = Expm1Coefficients<Degree>::kQ;
    constexpr int terms = sizeof(Expm1Coefficients<Degree>::kQ) / sizeof(float);
    __m256 q = _mm256_set1_ps(c[0]);
    for (int k = 1; k < terms; ++k) q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(c[k]));
    return _mm256_fmadd_ps(q, _mm256_mul_ps(r, r), r);
}

// 2^k as a float for k in [-126, 127].
inline __m256 pow2_8(__m256i k) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23)); }

// Every input, including overflow, underflow and NaN.
template <int Degree>
inline __m256 exp8_any(__m256 x) {
    const __m256 kMax = _mm256_set1_ps(88.7228394f);   // ln(FLT_MAX)
    const __m256 kMin = _mm256_set1_ps(-87.3365479f);  // ln(FLT_MIN)
    const __m256 over = _mm256_cmp_ps(x, kMax, _CMP_GT_OQ);
    const __m256 under = _mm256_cmp_ps(x, kMin, _CMP_LT_OQ);
    __m256 z;
    const __m256 t = expm1_reduced8<Degree>(exp8_reduce(_mm256_min_ps(_mm256_max_ps(x, kMin), kMax), &z));
    // 2^n for n in [-126, 128]: n = 128 only at the clamp, where 1 + t < 1 keeps the product finite
    // unless x was over the limit (handled below). Scale in two steps so that 2^128 never forms;
    // the second is exact, so in range this gives exp8's bits.
    const __m256i n = _mm256_sub_epi32(_mm256_castps_si256(z), _mm256_castps_si256(_mm256_set1_ps(ExpConstants::kShift)));
    const __m256i half = _mm256_srai_epi32(n, 1);
    const __m256 s1 = pow2_8(half);
    __m256 y = _mm256_mul_ps(_mm256_fmadd_ps(t, s1, s1), pow2_8(_mm256_sub_epi32(n, half)));
    y = _mm256_blendv_ps(y, _mm256_set1_ps(__builtin_inff()), over);
    y = _mm256_blendv_ps(y, _mm256_setzero_ps(), under);
    // NaN in, NaN out (the comparisons above are false for NaN, and min/max dropped it).
    const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
    return _mm256_blendv_ps(y, x, nan);
}

// The common case first: when every |x| <= 87 (no overflow, no result below FLT_MIN, no NaN),
// 2^n is the shifted sum's low bits moved into the exponent field, and one fused multiply-add
// gives 2^n (1 + t) with one rounding; otherwise exp8_any. Both give the same bits in range.
template <int Degree = 6>
inline __m256 exp8(__m256 x) {
    const __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
    if (_mm256_movemask_ps(_mm256_cmp_ps(ax, _mm256_set1_ps(87.0f), _CMP_NLE_UQ)) != 0) return exp8_any<Degree>(x);
    __m256 z;
    const __m256 t = expm1_reduced8<Degree>(exp8_reduce(x, &z));
    // (bits(z) << 23) keeps n << 23 (the shift constant's own bits fall off); + bits(1.0f) adds the bias.
    const __m256 s = _mm256_castsi256_ps(
        _mm256_add_epi32(_mm256_slli_epi32(_mm256_castps_si256(z), 23), _mm256_castps_si256(_mm256_set1_ps(1.0f))));
    return _mm256_fmadd_ps(t, s, s);
}

inline __m256 tanh8(__m256 x) {
    const __m256 sign = _mm256_and_ps(x, _mm256_set1_ps(-0.0f));
    const __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
    // Large |x|: 1 - 2 / (e^{2|x|} + 1), with the sign put back.
    const __m256 e = exp8(_mm256_add_ps(ax, ax));
    const __m256 big = _mm256_or_ps(
        _mm256_sub_ps(_mm256_set1_ps(1.0f), _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, _mm256_set1_ps(1.0f)))),
        sign);
    // Small |x|: x + x^3 P(x^2), a minimax fit on [0, 0.625].
    const __m256 z = _mm256_mul_ps(x, x);
    __m256 p = _mm256_set1_ps(-5.70498872745e-3f);
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(2.06390887954e-2f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-5.37397155531e-2f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.33314422036e-1f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-3.33332819422e-1f));
    const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), x, x);
    const __m256 is_small = _mm256_cmp_ps(ax, _mm256_set1_ps(0.625f), _CMP_LT_OQ);
    const __m256 y = _mm256_blendv_ps(big, small, is_small);
    const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
    return _mm256_blendv_ps(y, x, nan);
}

// sin and cos of eight floats with |x| <= 8192 (callers check): x = j pi/2 + r with |r| <= pi/4,
// pi/2 in three parts (Cody-Waite: j * part 1 and j * part 2 are exact for |j| < 2^13), then
// minimax polynomials for sin and cos of r on [-pi/4, pi/4] (cephes' sinf/cosf coefficients), and
// the quadrant j mod 4 picks and signs them.
inline void sincos8(__m256 x, __m256* sin_out, __m256* cos_out) {
    const __m256 j = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(0.636619772367581343f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(j, _mm256_set1_ps(1.5703125f), x);
    r = _mm256_fnmadd_ps(j, _mm256_set1_ps(4.837512969970703125e-4f), r);
    r = _mm256_fnmadd_ps(j, _mm256_set1_ps(7.54978995489188216e-8f), r);
    const __m256 z = _mm256_mul_ps(r, r);
    __m256 ps = _mm256_set1_ps(-1.9515295891e-4f);
    ps = _mm256_fmadd_ps(ps, z, _mm256_set1_ps(8.3321608736e-3f));
    ps = _mm256_fmadd_ps(ps, z, _mm256_set1_ps(-1.6666654611e-1f));
    const __m256 sin_r = _mm256_fmadd_ps(_mm256_mul_ps(ps, z), r, r);
    __m256 pc = _mm256_set1_ps(2.443315711809948e-5f);
    pc = _mm256_fmadd_ps(pc, z, _mm256_set1_ps(-1.388731625493765e-3f));
    pc = _mm256_fmadd_ps(pc, z, _mm256_set1_ps(4.166664568298827e-2f));
    const __m256 cos_r =
        _mm256_fmadd_ps(_mm256_mul_ps(pc, z), z, _mm256_fnmadd_ps(_mm256_set1_ps(0.5f), z, _mm256_set1_ps(1.0f)));
    // Quadrant q: sin x = (sin r, cos r, -sin r, -cos r)[q], cos x = (cos r, -sin r, -cos r, sin r)[q].
    const __m256i q = _mm256_cvtps_epi32(j);
    const __m256 odd = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(q, _mm256_set1_epi32(1)),
                                                              _mm256_set1_epi32(1)));
    const __m256 sin_sign = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_and_si256(q, _mm256_set1_epi32(2)), 30));
    const __m256 cos_sign = _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_and_si256(_mm256_add_epi32(q, _mm256_set1_epi32(1)), _mm256_set1_epi32(2)), 30));
    *sin_out = _mm256_xor_ps(_mm256_blendv_ps(sin_r, cos_r, odd), sin_sign);
    *cos_out = _mm256_xor_ps(_mm256_blendv_ps(cos_r, sin_r, odd), cos_sign);
}

}  // namespace
}  // namespace xb::cpu_kernels
