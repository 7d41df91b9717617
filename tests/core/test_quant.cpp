// The quantized types against an independent reference: the gguf Python package (llama.cpp's own
// implementation of ggml's block formats) wrote tests/data/quant/<type>.gguf (scripts/
// quant_fixtures.py). xbackend's quantize must give the same bytes for the legacy types and its
// dequantize the same bits for every type, also end to end through a config (blocks loaded from
// the file, or an f32 .npy quantized on loading). The k-quants' quantize, which gguf lacks, is held
// to error bounds (the newer formats' in test_quant_formats.cpp); the CPU's dot products (every
// instruction set this CPU runs) to the dot of the dequantized operands.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "formats/gguf.hpp"
#include "formats/npy.hpp"
#include "core/quant.hpp"
#include "core/quant_blocks.hpp"
#include "core/quant_random.hpp"
#include "cpu_kernels/quant_dot.hpp"
#include "test_config_util.hpp"
#include "quant_test_util.hpp"
#include "test_values.hpp"

namespace xb {
namespace {

// The types whose quantizer is ggml's reference rounding, which the gguf package has too.
constexpr DType kLegacy[] = {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,
                             DType::TQ1_0, DType::TQ2_0, DType::MXFP4};
constexpr DType kAll[] = {DType::Q4_0,   DType::Q4_1,    DType::Q5_0,   DType::Q5_1,    DType::Q8_0,
                          DType::Q4_K,   DType::Q5_K,    DType::Q6_K,   DType::Q2_K,    DType::Q3_K,
                          DType::IQ2_XXS, DType::IQ2_XS, DType::IQ2_S,  DType::IQ3_XXS, DType::IQ3_S,
                          DType::IQ1_S,  DType::IQ1_M,   DType::IQ4_NL, DType::IQ4_XS,  DType::TQ1_0,
                          DType::TQ2_0,  DType::MXFP4,   DType::NVFP4};

struct Fixture {
    int64_t n = 0;     // elements per row
    int64_t rows = 0;
    std::vector<float> input;         // legacy types only
    std::vector<std::byte> quantized;
    std::vector<float> dequantized;
};

std::vector<float> as_floats(const std::vector<std::byte>& bytes) {
    std::vector<float> v(bytes.size() / sizeof(float));
    std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
}

Fixture load_fixture(DType type) {
    Fixture f;
    const std::string path = config::testing::data_path(std::string("quant/") + dtype_name(type) + ".gguf");
    auto reader = GgufReader::open(path);
    EXPECT_TRUE(reader.is_ok()) << reader.status().to_string();
    if (!reader.is_ok()) return f;
    const GgufTensorInfo* q = reader->find_tensor("quantized");
    EXPECT_NE(q, nullptr) << path;
    if (q == nullptr) return f;
    f.n = q->ne[0];
    f.rows = q->ne[1];
    const std::array<int64_t, kMaxDims> shape{f.n, f.rows, 1, 1};
    auto quantized = reader->read_tensor("quantized", type, shape);
    auto dequantized = reader->read_tensor("dequantized", DType::F32, shape);
    EXPECT_TRUE(quantized.is_ok()) << quantized.status().to_string();
    EXPECT_TRUE(dequantized.is_ok()) << dequantized.status().to_string();
    if (!quantized.is_ok() || !dequantized.is_ok()) return f;
    f.quantized = std::move(quantized).value();
    f.dequantized = as_floats(*dequantized);
    if (reader->find_tensor("input") != nullptr) {
        auto input = reader->read_tensor("input", DType::F32, shape);
        EXPECT_TRUE(input.is_ok()) << input.status().to_string();
        if (input.is_ok()) f.input = as_floats(*input);
    }
    return f;
}

class QuantFixture : public testing::TestWithParam<DType> {};

TEST_P(QuantFixture, DequantizeGivesTheReferenceBits) {
    const DType type = GetParam();
    const Fixture f = load_fixture(type);
    ASSERT_GT(f.rows, 0);
    const size_t row_bytes = row_size(type, f.n);
    ASSERT_EQ(f.quantized.size(), row_bytes * static_cast<size_t>(f.rows));
    std::vector<float> out(static_cast<size_t>(f.n));
    for (int64_t r = 0; r < f.rows; ++r) {
        dequantize_row(type, f.quantized.data() + r * row_bytes, out.data(), f.n);
        for (int64_t i = 0; i < f.n; ++i) {
            const float want = f.dequantized[static_cast<size_t>(r * f.n + i)];
            ASSERT_EQ(float_bits(out[static_cast<size_t>(i)]), float_bits(want))
                << dtype_name(type) << " row " << r << " element " << i << ": " << out[static_cast<size_t>(i)]
                << " vs " << want;
        }
    }
}

// The types gguf quantizes (ggml's reference rounding): gguf has no reference quantize for the
// k-quants and iq4 (see the KQuant tests and test_quant_formats.cpp).
class LegacyQuantFixture : public testing::TestWithParam<DType> {};

TEST_P(LegacyQuantFixture, QuantizeGivesTheReferenceBytes) {
    const DType type = GetParam();
    const Fixture f = load_fixture(type);
    ASSERT_FALSE(f.input.empty()) << dtype_name(type) << ": the fixture has no input";
    const size_t row_bytes = row_size(type, f.n);
    std::vector<std::byte> out(row_bytes);
    for (int64_t r = 0; r < f.rows; ++r) {
        quantize_row(type, f.input.data() + r * f.n, out.data(), f.n);
        for (size_t i = 0; i < row_bytes; ++i) {
            ASSERT_EQ(out[i], f.quantized[static_cast<size_t>(r) * row_bytes + i])
                << dtype_name(type) << " row " << r << " byte " << i << " (block " << i / type_size(type) << ")";
        }
    }
}

// End to end as a user runs it: a config whose tensor takes the gguf package's quantized blocks
// ({"kind": "gguf"}), dequantized by a cast and gathered by get_rows on the CPU backend, gives the
// package's dequantized values bit for bit.
TEST_P(QuantFixture, ConfigLoadsTheBlocksAndComputesWithThem) {
    const DType type = GetParam();
    const Fixture f = load_fixture(type);
    ASSERT_GT(f.rows, 2);
    const std::string file = config::testing::data_path(std::string("quant/") + dtype_name(type) + ".gguf");
    const std::string text = R"({
        "tensors": {
            "w": { "shape": [)" + std::to_string(f.n) + ", " + std::to_string(f.rows) + R"(], "type": ")" +
                             dtype_name(type) + R"(", "init": { "kind": "gguf", "file": ")" + file + R"(", "tensor": "quantized" } },
            "rows": { "shape": [2], "type": "i32", "role": "input", "init": { "kind": "constant", "value": 2 } },
            "all": { "role": "output" },
            "picked": { "role": "output" }
        },
        "graph": [
            { "name": "all", "op": "cast", "args": ["w"], "params": { "type": "f32" } },
            { "name": "picked", "op": "get_rows", "args": ["w", "rows"] }
        ]
    })";
    auto spec = config::parse_config(text, "fixture.json");
    ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
    auto model = config::build_model(*spec, global_registry());
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    auto placed = config::testing::compute_alone(std::move(model).value());
    ASSERT_TRUE(placed.is_ok()) << placed.status().to_string();
    auto all_values = tensor_get_f32(*(*placed)->model.find("all"));
    auto picked_values = tensor_get_f32(*(*placed)->model.find("picked"));
    ASSERT_TRUE(all_values.is_ok() && picked_values.is_ok()) << all_values.status().to_string();
    const std::vector<float>& all = *all_values;
    const std::vector<float>& picked = *picked_values;
    ASSERT_EQ(all.size(), f.dequantized.size());
    for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(float_bits(all[i]), float_bits(f.dequantized[i])) << i;
    for (size_t i = 0; i < picked.size(); ++i) {
        ASSERT_EQ(float_bits(picked[i]), float_bits(f.dequantized[static_cast<size_t>(2 * f.n) + i % f.n])) << i;
    }
}

// An f32 .npy loaded into a quantized config tensor is quantized on the way in: for the legacy types
// the blocks are the gguf package's, byte for byte.
TEST_P(LegacyQuantFixture, ConfigQuantizesAnF32NpyIntoTheReferenceBlocks) {
    const DType type = GetParam();
    const Fixture f = load_fixture(type);
    ASSERT_FALSE(f.input.empty());
    NpyArray input;
    input.shape = {f.rows, f.n};
    input.data.resize(f.input.size() * sizeof(float));
    std::memcpy(input.data.data(), f.input.data(), input.data.size());
    const std::string npy = (std::filesystem::temp_directory_path() /
                             ("xb-quant-" + std::to_string(::getpid()) + "-" + dtype_name(type) + ".npy")).string();
    ASSERT_TRUE(write_npy(npy, input).is_ok());
    const std::string text = R"({
        "tensors": { "w": { "shape": [)" + std::to_string(f.n) + ", " + std::to_string(f.rows) + R"(], "type": ")" +
                             dtype_name(type) + R"(", "init": { "kind": "npy", "file": ")" + npy + R"(" } },
                     "y": { "role": "output" } },
        "graph": [ { "name": "y", "op": "cast", "args": ["w"], "params": { "type": "f32" } } ]
    })";
    auto spec = config::parse_config(text, "npy.json");
    ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
    auto model = config::build_model(*spec, global_registry());
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    auto placed = config::testing::compute_alone(std::move(model).value());
    std::filesystem::remove(npy);
    ASSERT_TRUE(placed.is_ok()) << placed.status().to_string();
    const Tensor& w = *(*placed)->model.find("w");
    std::vector<std::byte> blocks(w.nbytes());
    ASSERT_TRUE(tensor_get(w, blocks.data(), 0, blocks.size()).is_ok());
    EXPECT_EQ(blocks, f.quantized);
}

std::string type_param_name(const testing::TestParamInfo<DType>& info) { return dtype_name(info.param); }
INSTANTIATE_TEST_SUITE_P(Types, QuantFixture, testing::ValuesIn(kAll), type_param_name);
INSTANTIATE_TEST_SUITE_P(Types, LegacyQuantFixture, testing::ValuesIn(kLegacy), type_param_name);

// --- quantizers without a gguf reference: error bounds ------------------------------------------------

// Error of the round trip relative to the data's RMS. Bounds: the measured figures with a margin
// (normal / heavy-tailed data, 64 Ki values: q2_K 0.268 / 0.262, q3_K 0.144 / 0.147, iq4_nl
// 0.083 / 0.097, iq4_xs 0.084 / 0.100); ggml's own quantizers reach about the same on normal data
// (q4_K ~0.075, q5_K ~0.037, q6_K ~0.018 are what its published RMSE tables imply). A dropped bit
// plane or a wrong scale index gives ~1.
TEST(KQuant, RoundTripErrorIsBoundedPerType) {
    const auto normal = xbt::normal_values(1 << 16, 1);
    const auto heavy = xbt::heavy_tailed_data(1 << 16, 2);
    struct Bound {
        DType type;
        double normal, heavy;
    };
    for (const Bound& b : {Bound{DType::Q4_K, 0.085, 0.15}, Bound{DType::Q5_K, 0.043, 0.08},
                           Bound{DType::Q6_K, 0.021, 0.04}, Bound{DType::Q2_K, 0.29, 0.29},
                           Bound{DType::Q3_K, 0.16, 0.17}, Bound{DType::IQ4_NL, 0.092, 0.11},
                           Bound{DType::IQ4_XS, 0.092, 0.11}}) {
        const double en = xbt::relative_rms_error(b.type, normal);
        const double eh = xbt::relative_rms_error(b.type, heavy);
        EXPECT_LT(en, b.normal) << dtype_name(b.type) << " on normal data";
        EXPECT_LT(eh, b.heavy) << dtype_name(b.type) << " on heavy-tailed data";
        RecordProperty(std::string(dtype_name(b.type)) + "_rel_rms_normal", std::to_string(en));
    }
    // The legacy types for comparison (ggml's reference rounding, checked byte for byte above).
    EXPECT_LT(xbt::relative_rms_error(DType::Q4_0, normal), 0.12);
    EXPECT_LT(xbt::relative_rms_error(DType::Q8_0, normal), 0.006);
}

TEST(KQuant, ZerosConstantsAndTinyValuesStayFinite) {
    for (DType type : {DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_K, DType::Q2_K, DType::Q3_K, DType::IQ4_NL,
                       DType::IQ4_XS, DType::TQ1_0, DType::TQ2_0, DType::MXFP4}) {
        const bool ternary = type == DType::TQ1_0 || type == DType::TQ2_0;
        // Per element: the ternary formats keep only the sign pattern at the block's largest
        // magnitude; the 2- to 4-bit ones a third of it (mxfp4 rounds 3.99 to 3).
        const bool five_bits_or_more = type == DType::Q5_K || type == DType::Q6_K || type == DType::Q8_K;
        const double tol = ternary ? 1.0 : five_bits_or_more || type == DType::Q4_K ? 0.2 : 0.34;
        for (float value : {0.0f, 1.5f, -2.0f, 1e-30f, 6e4f}) {
            // The ternary formats store the block's largest magnitude as their f16 scale (as ggml
            // does): past f16's range it is inf.
            if (ternary && value > 3e4f) continue;
            std::vector<float> x(kQKK, value);
            x[7] = value * 2;  // not quite constant
            std::vector<std::byte> q(row_size(type, kQKK));
            std::vector<float> back(kQKK);
            quantize_row(type, x.data(), q.data(), kQKK);
            dequantize_row(type, q.data(), back.data(), kQKK);
            for (size_t i = 0; i < back.size(); ++i) {
                ASSERT_TRUE(std::isfinite(back[i])) << dtype_name(type) << " value " << value;
                ASSERT_NEAR(back[i], x[i], std::fabs(x[i]) * tol + 1e-6) << dtype_name(type) << " value " << value;
            }
        }
    }
}

// --- the CPU's dot products ------------------------------------------------------------------------------

// dot(weights row, activations) from the dequantized operands, in double. The formats with a
// minimum per block (q4_1, q5_1) meet the activations' stored sum s with it, as ggml's q8_1 blocks
// give it (rounded to f16): the minimum's term is m * s there, the rest the values less m.
double reference_dot(DType type, const std::vector<std::byte>& w, const std::vector<std::byte>& act, int64_t n) {
    std::vector<float> wf(static_cast<size_t>(n)), af(static_cast<size_t>(n));
    dequantize_row(type, w.data(), wf.data(), n);
    if (cpu_kernels::activation_format(type) == cpu_kernels::ActFormat::Q8K) {
        dequantize_row(DType::Q8_K, act.data(), af.data(), n);
        double sum = 0;
        for (size_t i = 0; i < wf.size(); ++i) sum += static_cast<double>(wf[i]) * af[i];
        return sum;
    }
    const auto* blocks = reinterpret_cast<const cpu_kernels::BlockQ8Sum*>(act.data());
    double sum = 0;
    for (int64_t b = 0; b < n / kQK; ++b) {
        const double m = xbt::block_minimum(type, w, b);
        sum += m * blocks[b].s;
        for (int j = 0; j < kQK; ++j) {
            const size_t i = static_cast<size_t>(b * kQK + j);
            sum += (static_cast<double>(wf[i]) - m) * (static_cast<double>(blocks[b].d) * blocks[b].qs[j]);
        }
    }
    return sum;
}

// A row of n weights of `type`: `values` quantized, or random valid blocks for the types without a
// quantizer.
std::vector<std::byte> weight_row(DType type, const std::vector<float>& values, int64_t n) {
    std::vector<std::byte> w(row_size(type, n));
    if (can_quantize(type)) {
        quantize_row(type, values.data(), w.data(), n);
    } else {
        fill_random_blocks(type, w.data(), n / blck_size(type), 7);
    }
    return w;
}

// Every column count a dot call takes (1..kMaxDotColumns), each column its own activations.
TEST(QuantDot, EveryInstructionSetMatchesTheDequantizedDot) {
    const int64_t n = 3 * kQKK;  // three super-blocks, 24 legacy blocks
    constexpr int kCols = cpu_kernels::kMaxDotColumns;
    const auto w_values = xbt::normal_values(static_cast<size_t>(n), 3);
    const auto x = xbt::heavy_tailed_data(static_cast<size_t>(n) * kCols, 4);
    for (Isa isa : supported_isas()) {
        const cpu_kernels::QuantDot& table = cpu_kernels::quant_dot(isa);
        for (DType type : kAll) {
            const std::vector<std::byte> w = weight_row(type, w_values, n);
            std::vector<float> wf(static_cast<size_t>(n));
            dequantize_row(type, w.data(), wf.data(), n);
            const size_t act_row = cpu_kernels::activation_row_bytes(type, n);
            std::vector<std::byte> act(act_row * kCols);
            double want[kCols], norm[kCols];  // norm: the scale of the terms, for a rounding error
            for (int j = 0; j < kCols; ++j) {
                const float* xj = x.data() + n * j;
                std::vector<std::byte> column(act_row);
                table.quantize_activations(type, xj, column.data(), n);
                std::copy(column.begin(), column.end(), act.begin() + static_cast<std::ptrdiff_t>(act_row * j));
                want[j] = reference_dot(type, w, column, n);
                norm[j] = 0;
                for (size_t i = 0; i < wf.size(); ++i) norm[j] += std::fabs(static_cast<double>(wf[i]) * xj[i]);
            }
            for (int ncols = 1; ncols <= kCols; ++ncols) {
                float got[kCols] = {};
                table.dot[static_cast<int>(type)](n, w.data(), act.data(), act_row, ncols, got);
                for (int j = 0; j < ncols; ++j) {
                    EXPECT_NEAR(got[j], want[j], 1e-5 * norm[j])
                        << isa_name(isa) << " " << dtype_name(type) << " column " << j << " of " << ncols;
                }
            }
        }
    }
}

// A NaN or an infinity anywhere in a column (any lane of any block) makes that column's dot with
// every type non-finite, and only that column's: a block's maximum that skipped a NaN quantized it
// as finite values, and a q8_K block whose maximum was NaN got the scale 0 (a column of zeros).
TEST(QuantDot, ANaNOrInfinityInAColumnReachesItsDotWithEveryType) {
    const int64_t n = 2 * kQKK;
    constexpr int kCols = 3;
    const auto w_values = xbt::normal_values(static_cast<size_t>(n), 8);
    const auto clean = xbt::heavy_tailed_data(static_cast<size_t>(n) * kCols, 9);
    for (Isa isa : supported_isas()) {
        const cpu_kernels::QuantDot& table = cpu_kernels::quant_dot(isa);
        for (DType type : kAll) {
            const std::vector<std::byte> w = weight_row(type, w_values, n);
            const size_t act_row = cpu_kernels::activation_row_bytes(type, n);
            for (const float special : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
                for (const int64_t at : {int64_t{0}, int64_t{7}, int64_t{8}, int64_t{31}, int64_t{200}, n - 1}) {
                    std::vector<float> x = clean;
                    x[static_cast<size_t>(n + at)] = special;  // column 1 only
                    std::vector<std::byte> act(act_row * kCols);
                    for (int j = 0; j < kCols; ++j) {
                        table.quantize_activations(type, x.data() + n * j, act.data() + act_row * j, n);
                    }
                    float got[kCols] = {};
                    table.dot[static_cast<int>(type)](n, w.data(), act.data(), act_row, kCols, got);
                    const std::string where = std::string(isa_name(isa)) + " " + dtype_name(type) + " " +
                                              std::to_string(special) + " at " + std::to_string(at);
                    EXPECT_FALSE(std::isfinite(got[1])) << where;
                    EXPECT_TRUE(std::isfinite(got[0]) && std::isfinite(got[2])) << where;
                }
            }
        }
    }
}

TEST(QuantDot, ActivationsQuantizeAlikeOnEveryInstructionSet) {
    const auto x = xbt::heavy_tailed_data(4 * kQK, 5);
    std::vector<std::byte> reference(cpu_kernels::activation_row_bytes(DType::Q4_0, 4 * kQK));
    cpu_kernels::quant_dot(Isa::Scalar).quantize_q8sum(x.data(), reference.data(), 4 * kQK);
    for (Isa isa : supported_isas()) {
        std::vector<std::byte> out(reference.size());
        cpu_kernels::quant_dot(isa).quantize_q8sum(x.data(), out.data(), 4 * kQK);
        const auto* a = reinterpret_cast<const cpu_kernels::BlockQ8Sum*>(out.data());
        const auto* r = reinterpret_cast<const cpu_kernels::BlockQ8Sum*>(reference.data());
        for (int b = 0; b < 4; ++b) {
            EXPECT_EQ(a[b].d, r[b].d) << isa_name(isa);
            EXPECT_NEAR(a[b].s, r[b].s, std::fabs(r[b].d) * 2) << isa_name(isa);
            for (int j = 0; j < kQK; ++j) EXPECT_NEAR(a[b].qs[j], r[b].qs[j], 1) << isa_name(isa) << " " << j;
        }
    }
}

// The k-quants' activations: the same scale as the portable q8_K, q's within one step (a rounding
// tie may go either way), and the 16-sums those of the block's own q's.
TEST(QuantDot, KQuantActivationsQuantizeAlikeOnEveryInstructionSet) {
    const int64_t n = 2 * kQKK;
    const auto x = xbt::heavy_tailed_data(static_cast<size_t>(n), 6);
    std::vector<BlockQ8_K> reference(n / kQKK);
    quantize_row(DType::Q8_K, x.data(), reference.data(), n);
    for (Isa isa : supported_isas()) {
        std::vector<BlockQ8_K> out(reference.size());
        cpu_kernels::quant_dot(isa).quantize_q8k(x.data(), out.data(), n);
        for (size_t b = 0; b < out.size(); ++b) {
            EXPECT_EQ(out[b].d, reference[b].d) << isa_name(isa);
            for (int j = 0; j < kQKK; ++j) {
                EXPECT_NEAR(out[b].qs[j], reference[b].qs[j], 1) << isa_name(isa) << " " << j;
            }
            for (int g = 0; g < kQKK / 16; ++g) {
                int sum = 0;
                for (int l = 0; l < 16; ++l) sum += out[b].qs[16 * g + l];
                EXPECT_EQ(out[b].bsums[g], sum) << isa_name(isa) << " group " << g;
            }
        }
    }
}

}  // namespace
}  // namespace xb
