// The row kernels (flash attention's and the one-token mul_mat's dot, dot_rows and axpy over
// f32/f16/bf16 rows) of every instruction set this CPU runs, against float64, on odd lengths that
// leave vector tails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/op_math.hpp"
#include "cpu_kernels/row_kernels.hpp"

namespace xb::cpu_kernels {
namespace {

// n random values stored as type t (as bytes) and the values each element holds after rounding.
struct Row {
    std::vector<std::byte> bytes;
    std::vector<double> values;
};

Row random_row(DType t, int64_t n, std::mt19937& rng) {
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    Row r;
    r.bytes.resize(static_cast<size_t>(n) * type_size(t));
    for (int64_t i = 0; i < n; ++i) {
        std::byte* p = r.bytes.data() + static_cast<size_t>(i) * type_size(t);
        store_from_f32(t, p, dist(rng));
        r.values.push_back(load_as_f32(t, p));
    }
    return r;
}

TEST(RowKernels, DotAndAxpyOfEverySetMatchFloat64) {
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (Isa isa : supported_isas()) {
        const RowKernels& table = row_kernels(isa);
        for (DType t : {DType::F32, DType::F16, DType::BF16}) {
            const int index = static_cast<int>(*row_type(t));
            for (int64_t n : {0, 1, 7, 8, 16, 27, 37, 51, 130}) {
                SCOPED_TRACE(std::string(isa_name(isa)) + " " + dtype_name(t) + " n=" + std::to_string(n));
                const Row row = random_row(t, n, rng);
                std::vector<float> q(static_cast<size_t>(n));
                for (float& x : q) x = dist(rng);
                double want = 0.0;
                for (size_t i = 0; i < q.size(); ++i) want += q[i] * row.values[i];
                const float got = table.dot[index](q.data(), row.bytes.data(), n);
                EXPECT_NEAR(got, want, 1e-5 * static_cast<double>(n + 1));

                // Each dot_rows walk gives every one of its rows the bits dot gives it alone (the
                // one-token mul_mat mixes walks at a thread's ends), whichever place the row
                // takes: R rows `stride` bytes apart, this row at one of them, random rows around.
                for (int slot = 0; slot < kDotRowsKinds; ++slot) {
                    const int count = dot_rows_count(slot);
                    const size_t stride = row.bytes.size() + 64;
                    std::vector<std::byte> rows(stride * static_cast<size_t>(count));
                    std::vector<float> alone(static_cast<size_t>(count));
                    const int place = (n + slot) % count;
                    for (int r = 0; r < count; ++r) {
                        const Row filler = r == place ? row : random_row(t, n, rng);
                        std::copy(filler.bytes.begin(), filler.bytes.end(), rows.begin() + static_cast<ptrdiff_t>(stride * r));
                        alone[static_cast<size_t>(r)] = table.dot[index](q.data(), rows.data() + stride * r, n);
                    }
                    std::vector<float> out(static_cast<size_t>(count), NAN);
                    table.dot_rows[index][slot](q.data(), rows.data(), stride, n, out.data());
                    for (int r = 0; r < count; ++r) EXPECT_EQ(out[static_cast<size_t>(r)], alone[static_cast<size_t>(r)]) << count << " rows, row " << r;
                    EXPECT_EQ(out[static_cast<size_t>(place)], got);
                }

                std::vector<float> acc = q;
                const float s = 0.75f;
                table.axpy[index](acc.data(), s, row.bytes.data(), n);
                for (size_t i = 0; i < acc.size(); ++i) EXPECT_NEAR(acc[i], q[i] + 0.75 * row.values[i], 1e-6) << i;
            }
        }
    }
    EXPECT_FALSE(row_type(DType::Q4_0).has_value());
}

// The transposition of every set on edge-sized blocks (not multiples of 8) with padded strides.
TEST(RowKernels, Transpose32OfEverySetMatchesTheDefinition) {
    for (Isa isa : supported_isas()) {
        for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{37, 29}, {8, 8}, {64, 16}, {1, 5}, {5, 1}}) {
            SCOPED_TRACE(std::string(isa_name(isa)) + " " + std::to_string(rows) + "x" + std::to_string(cols));
            const int64_t src_stride = rows + 3;  // src holds cols rows of src_stride elements
            const int64_t dst_stride = cols + 5;
            std::vector<uint32_t> src(static_cast<size_t>(cols * src_stride));
            for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint32_t>(i * 2654435761u);
            std::vector<uint32_t> dst(static_cast<size_t>(rows * dst_stride), 0xdeadbeefu);
            row_kernels(isa).transpose32(src.data(), src_stride, dst.data(), dst_stride, rows, cols);
            for (int64_t r = 0; r < rows; ++r) {
                for (int64_t c = 0; c < dst_stride; ++c) {
                    const uint32_t want = c < cols ? src[static_cast<size_t>(c * src_stride + r)] : 0xdeadbeefu;
                    ASSERT_EQ(dst[static_cast<size_t>(r * dst_stride + c)], want) << "row " << r << " col " << c;
                }
            }
        }
    }
}

// The float64 value each unary op approximates.
double reference(UnaryOp op, double x) {
    switch (op) {
        case UnaryOp::Exp: return std::exp(x);
        case UnaryOp::Tanh: return std::tanh(x);
        case UnaryOp::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
        case UnaryOp::Silu: return x / (1.0 + std::exp(-x));
        case UnaryOp::GeluQuick: return x / (1.0 + std::exp(-1.702 * x));
        case UnaryOp::Gelu: return 0.5 * x * (1.0 + std::tanh(0.79788456080286535587989211986876 * x * (1.0 + 0.044715 * x * x)));
        default: return NAN;
    }
}

// Units in the last place of a float of magnitude |y| (FLT_MIN's for smaller ones).
double ulp_of(double y) {
    const float f = std::max(static_cast<float>(std::fabs(y)), FLT_MIN);
    return static_cast<double>(std::nextafter(f, INFINITY) - f);
}

// Each vector map within its bound in ulps of the float64 value, wherever the op's float formula
// (core/op_math.hpp, what the scalar set computes) is itself within 4 ulps: where that formula
// cancels (gelu's 1 + tanh near -1, exp's overflow inside silu) no float evaluation is accurate.
// Measured maxima (README): exp 1.00, tanh 1.13, sigmoid 2.90, silu 3.06, gelu_quick 6.86, gelu 5.76
// (sigmoid, silu and gelu_quick take the cheaper degree-5 exp; exp and tanh the degree-6 one).
TEST(RowKernels, UnaryMapsAreWithinTheirUlpBounds) {
    const std::pair<UnaryOp, double> bounds[] = {{UnaryOp::Exp, 1.0},     {UnaryOp::Tanh, 1.5},      {UnaryOp::Sigmoid, 3.5},
                                                 {UnaryOp::Silu, 3.5},    {UnaryOp::GeluQuick, 8.0}, {UnaryOp::Gelu, 8.0}};
    std::vector<float> x;
    for (double v = -100.0; v <= 100.0; v += 0.00731) x.push_back(static_cast<float>(v));
    for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-5f, 88.7f, -87.3f, 0.625f, -0.625f}) x.push_back(v);
    for (Isa isa : supported_isas()) {
        for (const auto& [op, bound] : bounds) {
            const RowKernels::MapFn map = row_kernels(isa).unary[static_cast<int>(op)];
            if (map == nullptr) continue;  // the set maps element by element with the float formula
            SCOPED_TRACE(std::string(isa_name(isa)) + " " + unary_op_name(op));
            std::vector<float> y(x.size());
            map(x.data(), y.data(), static_cast<int64_t>(x.size()));
            size_t checked = 0;
            double worst = 0.0;
            for (size_t i = 0; i < x.size(); ++i) {
                const double want = reference(op, x[i]);
                if (std::fabs(want) < FLT_MIN || std::fabs(want) > FLT_MAX) continue;
                const double scalar_error = std::fabs(unary_f32(op, x[i]) - want) / ulp_of(want);
                if (scalar_error > 4.0) continue;
                ++checked;
                worst = std::max(worst, std::fabs(y[i] - want) / ulp_of(want));
                EXPECT_LE(std::fabs(y[i] - want) / ulp_of(want), bound) << "x = " << x[i] << ": " << y[i] << " vs " << want;
            }
            EXPECT_GT(checked, x.size() / 2);
            // Special values as the float formula gives them.
            const float specials[] = {NAN, INFINITY, -INFINITY, 0.0f};
            float out[4];
            map(specials, out, 4);
            for (int i = 0; i < 4; ++i) {
                const float want = unary_f32(op, specials[i]);
                if (std::isnan(want)) {
                    EXPECT_TRUE(std::isnan(out[i])) << specials[i];
                } else {
                    EXPECT_EQ(out[i], want) << specials[i];
                }
            }
        }
    }
}

// The one-pass gated maps (swiglu, geglu) give exactly the vector map's result times the gate,
// tail included.
TEST(RowKernels, GatedMapsEqualTheMapTimesTheGate) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-9.0f, 9.0f);
    constexpr int64_t n = 1003;
    std::vector<float> x(n), g(n);
    for (int64_t i = 0; i < n; ++i) {
        x[static_cast<size_t>(i)] = dist(rng);
        g[static_cast<size_t>(i)] = dist(rng);
    }
    for (Isa isa : supported_isas()) {
        const RowKernels& table = row_kernels(isa);
        for (const auto& [glu, act] : {std::pair{GluOp::SwiGlu, UnaryOp::Silu}, std::pair{GluOp::GeGlu, UnaryOp::Gelu}}) {
            const RowKernels::GatedMapFn gated = table.gated[static_cast<int>(glu)];
            if (gated == nullptr) continue;
            SCOPED_TRACE(std::string(isa_name(isa)) + " " + glu_op_name(glu));
            ASSERT_NE(table.unary[static_cast<int>(act)], nullptr);
            std::vector<float> want(n), got(n);
            table.unary[static_cast<int>(act)](x.data(), want.data(), n);
            for (int64_t i = 0; i < n; ++i) want[static_cast<size_t>(i)] *= g[static_cast<size_t>(i)];
            gated(x.data(), g.data(), got.data(), n);
            EXPECT_EQ(got, want);
        }
    }
}

}  // namespace
}  // namespace xb::cpu_kernels
