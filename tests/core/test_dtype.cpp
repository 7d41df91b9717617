// Type traits and conversions between float types.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "core/dtype.hpp"
#include "core/row_convert.hpp"

namespace xb {
namespace {

TEST(DType, TraitsAndNames) {
    EXPECT_EQ(type_size(DType::F32), 4u);
    EXPECT_EQ(type_size(DType::F16), 2u);
    EXPECT_EQ(type_size(DType::BF16), 2u);
    EXPECT_EQ(type_size(DType::I32), 4u);
    EXPECT_EQ(row_size(DType::F16, 7), 14u);
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64}) {
        auto parsed = dtype_from_name(dtype_name(t));
        ASSERT_TRUE(parsed.has_value());
        EXPECT_EQ(*parsed, t);
    }
    // The quantized types: ggml's names and block geometry; names match whatever their case.
    struct Block {
        DType type;
        const char* name;
        int64_t elements;
        size_t bytes;
    };
    for (const Block& b : {Block{DType::Q4_0, "q4_0", 32, 18}, Block{DType::Q4_1, "q4_1", 32, 20},
                           Block{DType::Q5_0, "q5_0", 32, 22}, Block{DType::Q5_1, "q5_1", 32, 24},
                           Block{DType::Q8_0, "q8_0", 32, 34}, Block{DType::Q4_K, "q4_K", 256, 144},
                           Block{DType::Q5_K, "q5_K", 256, 176}, Block{DType::Q6_K, "q6_K", 256, 210},
                           Block{DType::Q8_K, "q8_K", 256, 292}}) {
        EXPECT_STREQ(dtype_name(b.type), b.name);
        EXPECT_EQ(blck_size(b.type), b.elements) << b.name;
        EXPECT_EQ(type_size(b.type), b.bytes) << b.name;
        EXPECT_TRUE(is_quantized(b.type)) << b.name;
        EXPECT_FALSE(is_float_type(b.type)) << b.name;
        EXPECT_EQ(row_size(b.type, 3 * b.elements), 3 * b.bytes) << b.name;
    }
    EXPECT_EQ(dtype_from_name("Q4_K"), DType::Q4_K);
    EXPECT_EQ(dtype_from_name("q4_k"), DType::Q4_K);
    EXPECT_EQ(dtype_from_name("q8_0"), DType::Q8_0);
    EXPECT_FALSE(dtype_from_name("q8_1").has_value()) << "a GGUF type xbackend does not compute";
    EXPECT_FALSE(dtype_from_name("q1_0").has_value()) << "a GGUF type the gguf package cannot dequantize";
    EXPECT_FALSE(is_quantized(DType::F16));
}

// Every half value converts to float and back to itself (NaNs stay NaN).
TEST(DType, F16RoundTripsEveryValue) {
    for (uint32_t h = 0; h <= 0xffff; ++h) {
        const float f = f16_to_f32(static_cast<uint16_t>(h));
        if (std::isnan(f)) {
            EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f))));
            continue;
        }
        ASSERT_EQ(f32_to_f16(f), h) << "half 0x" << std::hex << h;
    }
}

// Float to half rounds to the nearest half, ties to even: compared with a brute-force search
// over the neighbouring halves in double precision.
TEST(DType, F16RoundsToNearestEven) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> mag(-20.0f, 15.0f);  // |x| < 65504: finite halves
    for (int i = 0; i < 20000; ++i) {
        const float x = std::ldexp(1.0f + std::uniform_real_distribution<float>(0, 1)(rng), static_cast<int>(mag(rng))) *
                        (i % 2 ? -1.0f : 1.0f);
        const uint16_t h = f32_to_f16(x);
        const double err = std::abs(static_cast<double>(f16_to_f32(h)) - x);
        for (int d : {-1, 1}) {
            const uint16_t other = static_cast<uint16_t>(h + d);
            const float of = f16_to_f32(other);
            if (std::isnan(of) || std::isinf(of) || ((other ^ h) & 0x8000)) continue;
            const double other_err = std::abs(static_cast<double>(of) - x);
            ASSERT_LE(err, other_err) << x;
            if (err == other_err) {
                EXPECT_EQ(h & 1, 0) << "tie must go to even: " << x;
            }
        }
    }
    EXPECT_TRUE(std::isinf(f16_to_f32(f32_to_f16(1e6f))));
    EXPECT_EQ(f16_to_f32(f32_to_f16(65504.0f)), 65504.0f);
    EXPECT_EQ(f16_to_f32(f32_to_f16(5.9604644775390625e-8f)), 5.9604644775390625e-8f);  // smallest subnormal
}

TEST(DType, BF16RoundsToNearestEven) {
    std::mt19937 rng(11);
    std::normal_distribution<float> dist(0.0f, 100.0f);
    for (int i = 0; i < 20000; ++i) {
        const float x = dist(rng);
        const uint16_t b = f32_to_bf16(x);
        const double err = std::abs(static_cast<double>(bf16_to_f32(b)) - x);
        for (int d : {-1, 1}) {
            const double other_err = std::abs(static_cast<double>(bf16_to_f32(static_cast<uint16_t>(b + d))) - x);
            ASSERT_LE(err, other_err) << x;
        }
    }
    EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

// The vectorised row converters agree bit for bit with the scalar definitions (NaNs: as NaN).
TEST(DType, RowConvertersMatchScalarConversions) {
    std::mt19937 rng(5);
    std::uniform_int_distribution<uint32_t> bits;
    const int n = 1003;  // not a multiple of the vector width: the tail is covered too
    std::vector<float> f(n);
    for (float& x : f) x = bits_float(bits(rng));
    f[0] = 65520.0f;  // rounds to inf
    f[1] = -0.0f;
    f[2] = 1e-8f;     // subnormal half
    std::vector<uint16_t> h(n), b(n);
    f32_to_f16_row(f.data(), h.data(), n);
    for (int i = 0; i < n; ++i) {
        if (std::isnan(f[i])) {
            EXPECT_TRUE(std::isnan(f16_to_f32(h[i])));
        } else {
            ASSERT_EQ(h[i], f32_to_f16(f[i])) << f[i];
        }
        b[i] = f32_to_bf16(f[i]);
    }
    std::vector<float> back(n);
    f16_to_f32_row(h.data(), back.data(), n);
    for (int i = 0; i < n; ++i) {
        if (std::isnan(back[i])) continue;
        ASSERT_EQ(float_bits(back[i]), float_bits(f16_to_f32(h[i])));
    }
    bf16_to_f32_row(b.data(), back.data(), n);
    for (int i = 0; i < n; ++i) {
        if (std::isnan(back[i])) continue;
        ASSERT_EQ(float_bits(back[i]), float_bits(bf16_to_f32(b[i])));
    }
}

TEST(DType, ConvertRowBetweenFloatTypes) {
    std::vector<float> src = {1.0f, -2.5f, 3.25f, 1e-3f, -7.0f};
    for (DType mid : {DType::F16, DType::BF16, DType::F32}) {
        std::vector<uint8_t> packed(row_size(mid, 5));
        ASSERT_TRUE(convert_row(DType::F32, src.data(), mid, packed.data(), 5));
        std::vector<float> back(5);
        ASSERT_TRUE(convert_row(mid, packed.data(), DType::F32, back.data(), 5));
        for (size_t i = 0; i < src.size(); ++i) EXPECT_NEAR(back[i], src[i], std::abs(src[i]) * 4e-3) << dtype_name(mid);
    }
    std::vector<uint16_t> h(5), b(5);
    ASSERT_TRUE(convert_row(DType::F32, src.data(), DType::F16, h.data(), 5));
    ASSERT_TRUE(convert_row(DType::F16, h.data(), DType::BF16, b.data(), 5));
    EXPECT_EQ(bf16_to_f32(b[1]), -2.5f);
    std::vector<int32_t> ints(5);
    EXPECT_FALSE(convert_row(DType::F32, src.data(), DType::I32, ints.data(), 5));
}

// f16 <-> bf16 rows (converted by chunks) equal the element-by-element conversion through f32, on
// a length that spans several chunks and ends in a partial one.
TEST(DType, ConvertRowBetweenHalfTypesMatchesElementwise) {
    const int64_t n = 1000;
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-70000.0f, 70000.0f);  // past f16's range too
    for (const auto& [from, to] : {std::pair{DType::F16, DType::BF16}, std::pair{DType::BF16, DType::F16}}) {
        std::vector<uint16_t> in(static_cast<size_t>(n)), out(static_cast<size_t>(n));
        for (uint16_t& v : in) v = from == DType::F16 ? f32_to_f16(dist(rng)) : f32_to_bf16(dist(rng));
        ASSERT_TRUE(convert_row(from, in.data(), to, out.data(), n));
        for (int64_t i = 0; i < n; ++i) {
            const float f = load_as_f32(from, &in[static_cast<size_t>(i)]);
            const uint16_t want = to == DType::F16 ? f32_to_f16(f) : f32_to_bf16(f);
            ASSERT_EQ(out[static_cast<size_t>(i)], want) << dtype_name(from) << " -> " << dtype_name(to) << " at " << i;
        }
    }
}

// Every instruction set's row conversions give the scalar set's bits: random values across the
// exponent range, halfway cases, subnormals, infinities and NaNs, on a length with a vector tail.
TEST(DType, RowConvertersOfEverySetGiveTheScalarBits) {
    std::mt19937 rng(9);
    std::vector<float> f;
    std::uniform_int_distribution<uint32_t> any_bits;
    for (int i = 0; i < 3000; ++i) {
        float v;
        const uint32_t bits = any_bits(rng);
        std::memcpy(&v, &bits, sizeof v);
        f.push_back(v);
    }
    for (float v : {0.0f, -0.0f, 1.0f, 65504.0f, 65520.0f, 1e-8f, 6e-8f, 3e-5f, INFINITY, -INFINITY, NAN}) f.push_back(v);
    for (uint32_t bits : {0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0x7f7fffffu}) {  // bf16 halfway and near-overflow
        float v;
        std::memcpy(&v, &bits, sizeof v);
        f.push_back(v);
    }
    const int64_t n = static_cast<int64_t>(f.size());  // not a multiple of 8
    std::vector<uint16_t> h(f.size()), hw(f.size()), b(f.size()), bw(f.size());
    std::vector<float> back(f.size()), backw(f.size());
    const RowConverters& ref = row_converters(Isa::Scalar);
    ref.f32_to_f16(f.data(), hw.data(), n);
    ref.f32_to_bf16(f.data(), bw.data(), n);
    for (Isa isa : supported_isas()) {
        SCOPED_TRACE(isa_name(isa));
        const RowConverters& t = row_converters(isa);
        t.f32_to_f16(f.data(), h.data(), n);
        t.f32_to_bf16(f.data(), b.data(), n);
        for (int64_t i = 0; i < n; ++i) {
            // NaNs may differ in payload between F16C and the software conversion; both must be NaN.
            if (std::isnan(f[static_cast<size_t>(i)])) {
                EXPECT_TRUE(std::isnan(f16_to_f32(h[static_cast<size_t>(i)])));
            } else {
                ASSERT_EQ(h[static_cast<size_t>(i)], hw[static_cast<size_t>(i)]) << "f16 of " << f[static_cast<size_t>(i)];
            }
            ASSERT_EQ(b[static_cast<size_t>(i)], bw[static_cast<size_t>(i)]) << "bf16 of " << f[static_cast<size_t>(i)];
        }
        t.f16_to_f32(hw.data(), back.data(), n);
        ref.f16_to_f32(hw.data(), backw.data(), n);
        for (int64_t i = 0; i < n; ++i) {
            if (!std::isnan(backw[static_cast<size_t>(i)])) {
                ASSERT_EQ(float_bits(back[static_cast<size_t>(i)]), float_bits(backw[static_cast<size_t>(i)]));
            }
        }
        t.bf16_to_f32(bw.data(), back.data(), n);
        ref.bf16_to_f32(bw.data(), backw.data(), n);
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(float_bits(back[static_cast<size_t>(i)]), float_bits(backw[static_cast<size_t>(i)]));
    }
}

}  // namespace
}  // namespace xb
