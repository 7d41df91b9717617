// Element types and conversions between them.
//
// Types are described by a block size and the bytes per block, as in ggml: a row of n elements of
// type t takes n / blck_size(t) * type_size(t) bytes. The quantized types (GGUF's block formats,
// core/quant_blocks.hpp) have blocks of 32 or 256 elements; every other type has blocks of one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

#include "core/host_device.hpp"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace xb {

enum class DType : uint8_t {
    F32, F16, BF16, I32, I64,
    Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,  // 32-element blocks
    Q4_K, Q5_K, Q6_K, Q8_K,        // 256-element super-blocks (q8_K: the k-quants' activation format)
    Q2_K, Q3_K,                    // the low-bit k-quants
    IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M,  // codebook formats (read-only, as in ggml)
    IQ4_NL, IQ4_XS,                // 4-bit non-linear
    TQ1_0, TQ2_0,                  // ternary
    MXFP4, NVFP4,                  // 4-bit floats with shared scales
};
inline constexpr int kDTypeCount = 29;

struct DTypeTraits {
    const char* name;
    int64_t blck_size;   // elements per block (1 for plain types)
    size_t type_size;    // bytes per block
    bool is_float;       // holds floating-point values element by element (convertible to and from f32)
    bool is_quantized;   // a block format: converts to and from f32 a whole block at a time
};

const DTypeTraits& dtype_traits(DType t);
inline const char* dtype_name(DType t) { return dtype_traits(t).name; }
inline int64_t blck_size(DType t) { return dtype_traits(t).blck_size; }
inline size_t type_size(DType t) { return dtype_traits(t).type_size; }
inline bool is_float_type(DType t) { return dtype_traits(t).is_float; }
inline bool is_quantized(DType t) { return dtype_traits(t).is_quantized; }
// Bytes of a row of n elements; n must be a multiple of the block size.
size_t row_size(DType t, int64_t n);
// "f32" -> DType::F32, "q4_K" (or "Q4_K", "q4_k") -> DType::Q4_K; nullopt for an unknown name.
std::optional<DType> dtype_from_name(std::string_view name);

// --- scalar conversions, shared with CUDA ---------------------------------------------------------

XB_HD uint32_t float_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
XB_HD float bits_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
// |f|'s bits. Ordered as integers, these order magnitudes as floats do, with every NaN above
// infinity: an integer max of them keeps a NaN, where a float max may drop it.
XB_HD uint32_t magnitude_bits(float f) { return float_bits(f) & 0x7FFFFFFFu; }

// IEEE half precision, round to nearest even; overflow gives inf, NaN stays NaN. On a GPU the
// conversion instruction rounds the same way (only NaN payloads may differ).
XB_HD uint16_t f32_to_f16(float f) {
#if defined(__CUDA_ARCH__)
    return __half_as_ushort(__float2half_rn(f));
#else
    const uint32_t x = float_bits(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t exp = (x >> 23) & 0xffu;
    uint32_t mant = x & 0x7fffffu;
    if (exp == 0xffu) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));
    const int32_t e = static_cast<int32_t>(exp) - 127 + 15;
    if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10) return static_cast<uint16_t>(sign);
        // Subnormal half: value = k * 2^-24 with k = mant * 2^(e-14), mant carrying its implicit 1.
        mant |= 0x800000u;
        const uint32_t shift = static_cast<uint32_t>(14 - e);
        uint32_t half = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1u);
        const uint32_t halfway = 1u << (shift - 1u);
        if (rem > halfway || (rem == halfway && (half & 1u))) ++half;
        return static_cast<uint16_t>(sign | half);
    }
    uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
    const uint32_t rem = mant & 0x1fffu;
    // A carry out of the mantissa correctly bumps the exponent (up to inf).
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;
    return static_cast<uint16_t>(half);
#endif
}

XB_HD float f16_to_f32(uint16_t h) {
#if defined(__CUDA_ARCH__)
    return __half2float(__ushort_as_half(h));
#else
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t mant = h & 0x3ffu;
    if (exp == 0) {
        const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;  // mant * 2^-24
        return sign ? -v : v;
    }
    if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));
    return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
#endif
}

// bfloat16: the top half of an f32, round to nearest even; NaN stays a (quiet) NaN. GPUs from
// sm_80 on convert with one instruction that rounds the same way (only NaN payloads may differ).
XB_HD uint16_t f32_to_bf16(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
#else
    const uint32_t x = float_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
    return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
#endif
}

XB_HD float bf16_to_f32(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

// Reads element 0 at `p` of type t as float (integers are converted by value).
XB_HD float load_as_f32(DType t, const void* p) {
    switch (t) {
        case DType::F32: return *static_cast<const float*>(p);
        case DType::F16: return f16_to_f32(*static_cast<const uint16_t*>(p));
        case DType::BF16: return bf16_to_f32(*static_cast<const uint16_t*>(p));
        case DType::I32: return static_cast<float>(*static_cast<const int32_t*>(p));
        case DType::I64: return static_cast<float>(*static_cast<const int64_t*>(p));
        default: return 0.0f;  // quantized types convert a block at a time (core/quant.hpp)
    }
}

// Writes v at `p` as type t (integers are truncated toward zero).
XB_HD void store_from_f32(DType t, void* p, float v) {
    switch (t) {
        case DType::F32: *static_cast<float*>(p) = v; return;
        case DType::F16: *static_cast<uint16_t*>(p) = f32_to_f16(v); return;
        case DType::BF16: *static_cast<uint16_t*>(p) = f32_to_bf16(v); return;
        case DType::I32: *static_cast<int32_t*>(p) = static_cast<int32_t>(v); return;
        case DType::I64: *static_cast<int64_t*>(p) = static_cast<int64_t>(v); return;
        default: return;  // quantized types convert a block at a time (core/quant.hpp)
    }
}

// --- row conversions ------------------------------------------------------------------------------

void f16_to_f32_row(const uint16_t* src, float* dst, int64_t n);
void f32_to_f16_row(const float* src, uint16_t* dst, int64_t n);
void bf16_to_f32_row(const uint16_t* src, float* dst, int64_t n);
void f32_to_bf16_row(const float* src, uint16_t* dst, int64_t n);
// Converts n contiguous elements between any two float or quantized types (and a type to itself);
// n must be a multiple of the block size of a quantized side. Returns false when the pair is not
// convertible (an integer and another type, or a destination format that cannot be quantized).
[[nodiscard]] bool convert_row(DType src_type, const void* src, DType dst_type, void* dst, int64_t n);

}  // namespace xb
