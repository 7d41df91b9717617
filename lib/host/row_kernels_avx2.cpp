// The row kernels with AVX2, FMA and F16C (compiled with -mavx2 -mfma -mf16c; chosen at run time
// only on CPUs that have them): 8 elements per step, f16 converted by vcvtph2ps, bf16 by a shift.
// Tails convert with the same instructions one element at a time: this file calls no inline
// function shared with other translation units, whose AVX2 copy the linker could otherwise keep
// for the whole program.
#include <immintrin.h>

#include <array>
#include <cstring>

#include "host/row_kernels.hpp"
#include "host/simd_math_avx2.hpp"

namespace xb::host {

namespace {

template <DType T>
__m256 load8(const std::byte* p) {
    if constexpr (T == DType::F32) {
        return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
    } else if constexpr (T == DType::F16) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    } else {
        const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
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

float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

template <DType T>
float dot(const float* q, const std::byte* row, int64_t n) {
    constexpr size_t ts = T == DType::F32 ? 4 : 2;
    int64_t i = 0;
    __m256 acc0 = _mm256_setzero_ps();
    __m256 acc1 = _mm256_setzero_ps();
    for (; i + 16 <= n; i += 16) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), load8<T>(row + i * ts), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), load8<T>(row + (i + 8) * ts), acc1);
    }
    for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), load8<T>(row + i * ts), acc0);
    float sum = hsum8(_mm256_add_ps(acc0, acc1));
    for (; i < n; ++i) sum += q[i] * load1<T>(row + i * ts);
    return sum;
}

template <DType T>
void axpy(float* acc, float s, const std::byte* row, int64_t n) {
    constexpr size_t ts = T == DType::F32 ? 4 : 2;
    int64_t i = 0;
    const __m256 sv = _mm256_set1_ps(s);
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(load8<T>(row + i * ts), sv, _mm256_loadu_ps(acc + i)));
    }
    for (; i < n; ++i) acc[i] += s * load1<T>(row + i * ts);
}

// --- unary maps -------------------------------------------------------------------------------

// y = f(x) eight at a time; the tail goes through the same vector code from a padded copy, so
// every element gets the same function whatever its position.
template <__m256 (*F)(__m256)>
void map(const float* x, float* y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, F(_mm256_loadu_ps(x + i)));
    if (i < n) {
        float tail[8] = {};
        std::memcpy(tail, x + i, static_cast<size_t>(n - i) * sizeof(float));
        _mm256_storeu_ps(tail, F(_mm256_loadu_ps(tail)));
        std::memcpy(y + i, tail, static_cast<size_t>(n - i) * sizeof(float));
    }
}

// Vector constants are made inside the functions: a namespace-scope __m256 could be initialised at
// program start, running AVX on CPUs that lack it.
__m256 one8() { return _mm256_set1_ps(1.0f); }

__m256 sigmoid8(__m256 x) { return _mm256_div_ps(one8(), _mm256_add_ps(one8(), exp8(_mm256_sub_ps(_mm256_setzero_ps(), x)))); }
__m256 silu8(__m256 x) { return _mm256_div_ps(x, _mm256_add_ps(one8(), exp8(_mm256_sub_ps(_mm256_setzero_ps(), x)))); }
__m256 gelu_quick8(__m256 x) {
    return _mm256_div_ps(x, _mm256_add_ps(one8(), exp8(_mm256_mul_ps(x, _mm256_set1_ps(-1.702f)))));
}
// 0.5 x (1 + tanh(sqrt(2/pi) x (1 + 0.044715 x^2))), as core/op_math.hpp's gelu_f32.
__m256 gelu8(__m256 x) {
    const __m256 inner = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.79788456080286535587989211986876f), x),
                                       _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(0.044715f), x), x, one8()));
    return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), _mm256_add_ps(one8(), tanh8(inner)));
}

constexpr std::array<RowKernels::MapFn, kUnaryOpCount> unary_maps() {
    std::array<RowKernels::MapFn, kUnaryOpCount> maps{};
    maps[static_cast<int>(UnaryOp::Gelu)] = &map<gelu8>;
    maps[static_cast<int>(UnaryOp::GeluQuick)] = &map<gelu_quick8>;
    maps[static_cast<int>(UnaryOp::Silu)] = &map<silu8>;
    maps[static_cast<int>(UnaryOp::Tanh)] = &map<tanh8>;
    maps[static_cast<int>(UnaryOp::Sigmoid)] = &map<sigmoid8>;
    maps[static_cast<int>(UnaryOp::Exp)] = &map<exp8>;
    return maps;
}

}  // namespace

const RowKernels& row_kernels_avx2() {
    static const RowKernels kTable = [] {
        RowKernels t{Isa::Avx2,
                     {&dot<DType::F32>, &dot<DType::F16>, &dot<DType::BF16>},
                     {&axpy<DType::F32>, &axpy<DType::F16>, &axpy<DType::BF16>},
                     {}};
        const auto maps = unary_maps();
        for (int i = 0; i < kUnaryOpCount; ++i) t.unary[i] = maps[static_cast<size_t>(i)];
        return t;
    }();
    return kTable;
}

}  // namespace xb::host
