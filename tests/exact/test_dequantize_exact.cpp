// Exact dequantization (lib/exact/dequantize.hpp): every storage type read as the double it stands
// for. ggml's f32 arithmetic is exact for the formats of one product and rounds the two-term ones
// (q4_1, q5_1, q2_K, q4_K, q5_K) and q8_K; the exact values must stay within one f32 rounding of it,
// equal it where it is exact, and equal the format's formula evaluated in double.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/quant.hpp"
#include "core/quant_blocks.hpp"
#include "core/quant_random.hpp"
#include "exact/dequantize.hpp"

namespace xb {
namespace {

constexpr DType kTwoTermTypes[] = {DType::Q4_1, DType::Q5_1, DType::Q2_K, DType::Q4_K, DType::Q5_K, DType::Q8_K};

bool is_two_term(DType t) {
    for (DType u : kTwoTermTypes)
        if (u == t) return true;
    return false;
}

struct Decoded {
    std::vector<double> exact;
    std::vector<float> f32;
};

Decoded decode(DType type, int64_t blocks, uint64_t seed) {
    const int64_t n = blocks * blck_size(type);
    std::vector<std::byte> bytes(row_size(type, n));
    fill_random_blocks(type, bytes.data(), blocks, seed);
    Decoded d{std::vector<double>(static_cast<size_t>(n)), std::vector<float>(static_cast<size_t>(n))};
    exact::dequantize_row_exact(type, bytes.data(), d.exact.data(), n);
    dequantize_row(type, bytes.data(), d.f32.data(), n);
    return d;
}

TEST(ExactDequantize, EveryFormatIsWithinOneF32RoundingOfGgmlsAndEqualWhereThatIsExact) {
    for (int t = 0; t < kDTypeCount; ++t) {
        const auto type = static_cast<DType>(t);
        if (!is_quantized(type)) continue;
        SCOPED_TRACE(dtype_name(type));
        const Decoded d = decode(type, 64, 11);
        int differ = 0;
        for (size_t i = 0; i < d.exact.size(); ++i) {
            const double f = d.f32[i];
            ASSERT_LE(std::abs(d.exact[i] - f), std::abs(f) * 0x1p-24 + 1e-300) << "element " << i;
            differ += d.exact[i] != f;
        }
        if (!is_two_term(type)) {
            EXPECT_EQ(differ, 0) << "f32 dequantization is exact for one-product formats";
        }
    }
}

// Blocks whose two terms lie far apart: value 15 * 1.0 plus (or minus) a minimum of 2^-14 (1 + 2^-10)
// needs 29 significant bits, so f32 rounds it and the exact reading must not.
TEST(ExactDequantize, TwoTermFormatsRoundInF32AndNotHere) {
    const uint16_t one = f32_to_f16(1.0f);
    const uint16_t tiny = 0x0401;  // 2^-14 (1 + 2^-10), an f16 with its lowest mantissa bit set
    const double tiny_value = std::ldexp(1.0 + std::ldexp(1.0, -10), -14);

    BlockQ4_1 q41{};
    q41.d = one;
    q41.m = tiny;
    std::memset(q41.qs, 0xFF, sizeof q41.qs);
    std::vector<double> exact(kQK);
    std::vector<float> f32(kQK);
    exact::dequantize_row_exact(DType::Q4_1, &q41, exact.data(), kQK);
    dequantize_row(DType::Q4_1, &q41, f32.data(), kQK);
    EXPECT_EQ(exact[0], 15.0 + tiny_value);
    EXPECT_NE(static_cast<double>(f32[0]), exact[0]) << "f32 holds 15 + 2^-14 (1 + 2^-10) exactly?";

    BlockQ4_K q4k{};
    q4k.d = one;
    q4k.dmin = tiny;
    q4k.scales[0] = 63;  // sub-block 0: scale 63, min 63
    q4k.scales[4] = 63;
    std::memset(q4k.qs, 0x0F, 32);  // sub-block 0's quants (the low nibbles of qs[0..31]) all 15
    exact.assign(kQKK, 0.0);
    f32.assign(kQKK, 0.0f);
    exact::dequantize_row_exact(DType::Q4_K, &q4k, exact.data(), kQKK);
    dequantize_row(DType::Q4_K, &q4k, f32.data(), kQKK);
    EXPECT_EQ(exact[0], 63.0 * 15.0 - tiny_value * 63.0);
    EXPECT_NE(static_cast<double>(f32[0]), exact[0]);
}

TEST(ExactDequantize, Q4KIsItsFormulaInDouble) {
    // x = d * sc_j * q - dmin * m_j, from the block's fields, written out independently.
    const int64_t blocks = 16;
    std::vector<BlockQ4_K> b(blocks);
    fill_random_blocks(DType::Q4_K, b.data(), blocks, 3);
    std::vector<double> got(static_cast<size_t>(blocks * kQKK));
    exact::dequantize_row_exact(DType::Q4_K, b.data(), got.data(), blocks * kQKK);
    for (int64_t k = 0; k < blocks; ++k) {
        const double d = f16_to_f32(b[k].d), dmin = f16_to_f32(b[k].dmin);
        for (int e = 0; e < kQKK; ++e) {
            const int j = e / 32;  // sub-block: low nibbles of qs[32 (j/2) ..] for even j, high for odd
            int sc = 0, m = 0;
            k_scale_min(b[k].scales, j, sc, m);
            const int byte = b[k].qs[32 * (j / 2) + e % 32];
            const int q = j % 2 == 0 ? (byte & 0x0F) : (byte >> 4);
            ASSERT_EQ(got[static_cast<size_t>(k * kQKK + e)], d * sc * q - dmin * m) << "block " << k << " element " << e;
        }
    }
}

TEST(ExactDequantize, FloatAndIntegerTypesWiden) {
    const uint16_t h[2] = {f32_to_f16(0.333f), f32_to_f16(-2.5f)};
    double out[2];
    exact::dequantize_row_exact(DType::F16, h, out, 2);
    EXPECT_EQ(out[0], static_cast<double>(f16_to_f32(h[0])));
    EXPECT_EQ(out[1], -2.5);
    const int32_t ids[2] = {7, -3};
    exact::dequantize_row_exact(DType::I32, ids, out, 2);
    EXPECT_EQ(out[0], 7.0);
    EXPECT_EQ(out[1], -3.0);
}

}  // namespace
}  // namespace xb
