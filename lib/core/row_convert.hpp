// The f16/bf16 <-> f32 row conversions behind f16_to_f32_row and friends (core/dtype.hpp), one table
// per instruction set, each in its own translation unit compiled for that set only
// (row_convert_<isa>.cpp): they pack f16 weights for every mul_mat and convert every f16 copy, so a
// portable binary must still use F16C where the CPU has it. All sets give the same bits.
#pragma once

#include <cstdint>

#include "core/isa.hpp"

namespace xb {

struct RowConverters {
    Isa isa;
    void (*f16_to_f32)(const uint16_t* src, float* dst, int64_t n);
    void (*f32_to_f16)(const float* src, uint16_t* dst, int64_t n);  // round to nearest even
    void (*bf16_to_f32)(const uint16_t* src, float* dst, int64_t n);
    void (*f32_to_bf16)(const float* src, uint16_t* dst, int64_t n);  // round to nearest even, NaN stays NaN
};

// The table of `isa` (which this CPU must support), and that of active_isa().
const RowConverters& row_converters(Isa isa);
const RowConverters& row_converters();

// Per instruction set (row_convert_<isa>.cpp).
const RowConverters& row_converters_scalar();
const RowConverters& row_converters_avx2();

}  // namespace xb
