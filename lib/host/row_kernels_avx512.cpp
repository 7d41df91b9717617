// The row kernels with AVX-512 (F, BW, VL; compiled with those flags and chosen at run time only on
// CPUs that have them): the dot products and axpy of the one-token mul_mat and flash attention, 16
// elements per step, f16 converted by vcvtph2ps, bf16 by a shift; and the maps whose cost is one
// exponential (exp, sigmoid, silu, gelu_quick, swiglu), 16 at a time with the AVX2 set's exp
// polynomial. tanh, gelu, geglu, exp_sum, sincos and the transposition are the AVX2 set's. Like
// the AVX2 file, this one calls no inline function shared with other translation units
// (simd_math_avx2.hpp's functions have internal linkage: this file gets its own copies).
#include <immintrin.h>

#include <cstring>

#include "host/row_kernels.hpp"
#include "host/simd_math_avx2.hpp"

namespace xb::host {

namespace {

// Masked forms with an explicit source throughout: the plain conversions, shifts and
// _mm512_reduce_add_ps trip gcc 12's -Wuninitialized inside its own headers.
constexpr __mmask16 kAll = 0xffff;

template <DType T>
__m512 load16(const std::byte* p) {
    if constexpr (T == DType::F32) {
        return _mm512_loadu_ps(reinterpret_cast<const float*>(p));
    } else if constexpr (T == DType::F16) {
        return _mm512_mask_cvtph_ps(_mm512_setzero_ps(), kAll, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    } else {
        const __m512i zero = _mm512_setzero_si512();
        const __m512i w = _mm512_mask_cvtepu16_epi32(zero, kAll, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
        return _mm512_castsi512_ps(_mm512_mask_slli_epi32(zero, kAll, w, 16));
    }
}

template <DType T>
float load1(const std::byte* p) {
    if constexpr (T == DType::F32) {
        float v;
        std::memcpy(&v, p, sizeof v);
        return v;
    } else {
        uint16_t h;
        std::memcpy(&h, p, sizeof h);
        if constexpr (T == DType::F16) return _cvtsh_ss(h);
        const uint32_t bits = static_cast<uint32_t>(h) << 16;
        float v;
        std::memcpy(&v, &bits, sizeof v);
        return v;
    }
}

// The sum of four accumulators' lanes, in one fixed order (dot and dot2 must agree bit for bit).
float sum4(const __m512* acc) {
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
    for (int width = 8; width > 0; width /= 2) {
        for (int l = 0; l < width; ++l) lanes[l] += lanes[l + width];
    }
    return lanes[0];
}

// Four independent sums of 16 lanes, 64 elements per step; then 16 at a time into the first; the
// tail one element at a time after the horizontal sum.
template <DType T>
float dot(const float* q, const std::byte* row, int64_t n) {
    constexpr size_t ts = T == DType::F32 ? 4 : 2;
    int64_t i = 0;
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (; i + 64 <= n; i += 64) {
        for (int k = 0; k < 4; ++k) {
            acc[k] = _mm512_fmadd_ps(_mm512_loadu_ps(q + i + 16 * k), load16<T>(row + (i + 16 * k) * ts), acc[k]);
        }
    }
    for (; i + 16 <= n; i += 16) acc[0] = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), load16<T>(row + i * ts), acc[0]);
    float sum = sum4(acc);
    for (; i < n; ++i) sum += q[i] * load1<T>(row + i * ts);
    return sum;
}

// dot of q with two rows at once, each with exactly dot's operations (so the same bits): every
// load of q serves both rows.
template <DType T>
void dot2(const float* q, const std::byte* const* rows, int64_t n, float* out) {
    constexpr size_t ts = T == DType::F32 ? 4 : 2;
    const std::byte* r0 = rows[0];
    const std::byte* r1 = rows[1];
    int64_t i = 0;
    __m512 a[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    __m512 b[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (; i + 64 <= n; i += 64) {
        for (int k = 0; k < 4; ++k) {
            const __m512 qv = _mm512_loadu_ps(q + i + 16 * k);
            a[k] = _mm512_fmadd_ps(qv, load16<T>(r0 + (i + 16 * k) * ts), a[k]);
            b[k] = _mm512_fmadd_ps(qv, load16<T>(r1 + (i + 16 * k) * ts), b[k]);
        }
    }
    for (; i + 16 <= n; i += 16) {
        const __m512 qv = _mm512_loadu_ps(q + i);
        a[0] = _mm512_fmadd_ps(qv, load16<T>(r0 + i * ts), a[0]);
        b[0] = _mm512_fmadd_ps(qv, load16<T>(r1 + i * ts), b[0]);
    }
    float sa = sum4(a);
    float sb = sum4(b);
    for (; i < n; ++i) {
        sa += q[i] * load1<T>(r0 + i * ts);
        sb += q[i] * load1<T>(r1 + i * ts);
    }
    out[0] = sa;
    out[1] = sb;
}

template <DType T>
void axpy(float* acc, float s, const std::byte* row, int64_t n) {
    constexpr size_t ts = T == DType::F32 ? 4 : 2;
    int64_t i = 0;
    const __m512 sv = _mm512_set1_ps(s);
    for (; i + 16 <= n; i += 16) {
        _mm512_storeu_ps(acc + i, _mm512_fmadd_ps(load16<T>(row + i * ts), sv, _mm512_loadu_ps(acc + i)));
    }
    for (; i < n; ++i) acc[i] += s * load1<T>(row + i * ts);
}

// --- maps -------------------------------------------------------------------------------------

// Vector constants are made inside the functions (see row_kernels_avx2.cpp).
__m512 splat(float v) { return _mm512_set1_ps(v); }

// exp8's fast path 16 wide: when every |x| <= 87, n = round(x log2e) from the shifted sum's bits,
// e^r - 1 by the same polynomial, 2^n (1 + t) in one fused multiply-add: exp8's bits. Otherwise
// (overflow, underflow, NaN) each half goes through exp8_any.
template <int Degree>
__m512 exp16(__m512 x) {
    const __m512 ax = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff)));
    if (_mm512_cmp_ps_mask(ax, splat(87.0f), _CMP_NLE_UQ) != 0) {
        alignas(64) float v[16];
        _mm512_store_ps(v, x);
        _mm256_store_ps(v, exp8_any<Degree>(_mm256_load_ps(v)));
        _mm256_store_ps(v + 8, exp8_any<Degree>(_mm256_load_ps(v + 8)));
        return _mm512_load_ps(v);
    }
    const __m512 shift = splat(12582912.0f);  // 1.5 * 2^23
    const __m512 z = _mm512_fmadd_ps(x, splat(1.44269504088896341f), shift);
    const __m512 n = _mm512_sub_ps(z, shift);
    __m512 r = _mm512_fnmadd_ps(n, splat(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, splat(-2.12194440e-4f), r);
    __m512 q;
    if constexpr (Degree == 6) {
        q = splat(0x1.6bd908p-10f);
        q = _mm512_fmadd_ps(q, r, splat(0x1.1239b0p-7f));
        q = _mm512_fmadd_ps(q, r, splat(0x1.555682p-5f));
        q = _mm512_fmadd_ps(q, r, splat(0x1.555492p-3f));
        q = _mm512_fmadd_ps(q, r, splat(0x1.fffffep-2f));
    } else {
        q = splat(0x1.106554p-7f);
        q = _mm512_fmadd_ps(q, r, splat(0x1.5727a4p-5f));
        q = _mm512_fmadd_ps(q, r, splat(0x1.5557aap-3f));
        q = _mm512_fmadd_ps(q, r, splat(0x1.fffe04p-2f));
    }
    const __m512 t = _mm512_fmadd_ps(q, _mm512_mul_ps(r, r), r);
    const __m512i bits = _mm512_mask_slli_epi32(_mm512_setzero_si512(), kAll, _mm512_castps_si512(z), 23);
    const __m512 s = _mm512_castsi512_ps(_mm512_add_epi32(bits, _mm512_castps_si512(splat(1.0f))));
    return _mm512_fmadd_ps(t, s, s);
}

__m512 exp16_6(__m512 x) { return exp16<6>(x); }
__m512 sigmoid16(__m512 x) { return _mm512_div_ps(splat(1.0f), _mm512_add_ps(splat(1.0f), exp16<5>(_mm512_sub_ps(_mm512_setzero_ps(), x)))); }
__m512 silu16(__m512 x) { return _mm512_div_ps(x, _mm512_add_ps(splat(1.0f), exp16<5>(_mm512_sub_ps(_mm512_setzero_ps(), x)))); }
__m512 gelu_quick16(__m512 x) {
    return _mm512_div_ps(x, _mm512_add_ps(splat(1.0f), exp16<5>(_mm512_mul_ps(x, splat(-1.702f)))));
}

// y = F(x) sixteen at a time; the tail through the same vector code from a padded copy.
template <__m512 (*F)(__m512)>
void map(const float* x, float* y, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, F(_mm512_loadu_ps(x + i)));
    if (i < n) {
        float tail[16] = {};
        std::memcpy(tail, x + i, static_cast<size_t>(n - i) * sizeof(float));
        _mm512_storeu_ps(tail, F(_mm512_loadu_ps(tail)));
        std::memcpy(y + i, tail, static_cast<size_t>(n - i) * sizeof(float));
    }
}

// y = F(x) * g sixteen at a time, the tail from padded copies as in map.
template <__m512 (*F)(__m512)>
void gated_map(const float* x, const float* g, float* y, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_mul_ps(F(_mm512_loadu_ps(x + i)), _mm512_loadu_ps(g + i)));
    if (i < n) {
        float xt[16] = {}, gt[16] = {};
        std::memcpy(xt, x + i, static_cast<size_t>(n - i) * sizeof(float));
        std::memcpy(gt, g + i, static_cast<size_t>(n - i) * sizeof(float));
        _mm512_storeu_ps(xt, _mm512_mul_ps(F(_mm512_loadu_ps(xt)), _mm512_loadu_ps(gt)));
        std::memcpy(y + i, xt, static_cast<size_t>(n - i) * sizeof(float));
    }
}

}  // namespace

const RowKernels& row_kernels_avx512() {
    static const RowKernels kTable = [] {
        RowKernels t = row_kernels_avx2();
        t.isa = Isa::Avx512;
        constexpr int f32 = static_cast<int>(RowType::F32), f16 = static_cast<int>(RowType::F16),
                      bf16 = static_cast<int>(RowType::BF16);
        t.dot[f32] = &dot<DType::F32>;
        t.dot[f16] = &dot<DType::F16>;
        t.dot[bf16] = &dot<DType::BF16>;
        t.dot2[f32] = &dot2<DType::F32>;
        t.dot2[f16] = &dot2<DType::F16>;
        t.dot2[bf16] = &dot2<DType::BF16>;
        t.axpy[f32] = &axpy<DType::F32>;
        t.axpy[f16] = &axpy<DType::F16>;
        t.axpy[bf16] = &axpy<DType::BF16>;
        t.unary[static_cast<int>(UnaryOp::Exp)] = &map<exp16_6>;
        t.unary[static_cast<int>(UnaryOp::Sigmoid)] = &map<sigmoid16>;
        t.unary[static_cast<int>(UnaryOp::Silu)] = &map<silu16>;
        t.unary[static_cast<int>(UnaryOp::GeluQuick)] = &map<gelu_quick16>;
        t.gated[static_cast<int>(GluOp::SwiGlu)] = &gated_map<silu16>;
        return t;
    }();
    return kTable;
}

}  // namespace xb::host
