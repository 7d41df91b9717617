// The row loops (cpu_kernels/row_loops.hpp) and soft_max's exp_sum row kernel of every instruction set
// this CPU runs, against float64, on odd lengths that leave vector tails and in place; the
// reductions of all sets must agree bit for bit (they add in the same order).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cpu_kernels/row_kernels.hpp"
#include "cpu_kernels/row_loops.hpp"

namespace xb::cpu_kernels {
namespace {

constexpr int64_t kLengths[] = {0, 1, 7, 8, 9, 31, 130, 1031};

std::vector<float> random_floats(int64_t n, std::mt19937& rng, float lo = -2.0f, float hi = 2.0f) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = dist(rng);
    return v;
}

// Relative error bound for sums of n terms of mixed sign held in double: f32 rounding of the
// terms only.
void expect_close(double got, double want, double scale) { EXPECT_NEAR(got, want, 1e-6 * (scale + 1.0)); }

std::string trace(Isa isa, int64_t n) { return std::string(isa_name(isa)) + " n=" + std::to_string(n); }

TEST(RowLoops, ElementwiseLoopsOfEverySetMatchFloat64InPlaceToo) {
    std::mt19937 rng(11);
    for (Isa isa : supported_isas()) {
        const RowLoops& loops = row_loops(isa);
        EXPECT_EQ(loops.isa, isa);
        for (int64_t n : kLengths) {
            SCOPED_TRACE(trace(isa, n));
            const std::vector<float> x = random_floats(n, rng), y = random_floats(n, rng, 0.5f, 2.0f);
            std::vector<float> out(static_cast<size_t>(n));
            loops.scale(x.data(), out.data(), n, 0.75f, -0.25f);
            for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(out[i], x[i] * 0.75 - 0.25, 1e-6) << i;
            for (int op = 0; op < 4; ++op) {
                std::vector<float> d = x;  // in place: d aliases x
                loops.binary[op](d.data(), y.data(), d.data(), n);
                for (size_t i = 0; i < x.size(); ++i) {
                    const double a = x[i], b = y[i];
                    const double want = op == 0 ? a + b : op == 1 ? a - b : op == 2 ? a * b : a / b;
                    EXPECT_NEAR(d[i], want, 1e-6 * (std::fabs(want) + 1.0)) << "op " << op << " i " << i;
                }
            }
            const std::vector<float> m = random_floats(n, rng);
            std::vector<float> v = x;
            loops.scale_add(v.data(), m.data(), v.data(), n, 0.5f, -1.5f);
            for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(v[i], 0.5 * x[i] - 1.5 * m[i], 1e-6) << i;
            loops.scale_add(x.data(), nullptr, v.data(), n, 0.5f, -1.5f);
            for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(v[i], 0.5 * x[i], 1e-7) << i;
        }
    }
}

// Attention's logits: scaled scores plus the mask where the mask is finite, -inf where it is -inf
// even when the score there is NaN or infinite (an unwritten cache slot's key); NaN scores of
// attended keys stay NaN.
TEST(RowLoops, MaskedLogitsOfEverySetKeepMaskedKeysAtMinusInfinity) {
    std::mt19937 rng(17);
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    for (Isa isa : supported_isas()) {
        for (int64_t n : kLengths) {
            SCOPED_TRACE(trace(isa, n));
            std::vector<float> w = random_floats(n, rng), m = random_floats(n, rng);
            for (int64_t i = 0; i < n; i += 3) m[static_cast<size_t>(i)] = -inf;
            for (int64_t i = 0; i < n; i += 7) w[static_cast<size_t>(i)] = i % 2 == 0 ? nan : inf;
            std::vector<float> got = w;
            row_loops(isa).masked_logits(got.data(), m.data(), n, 0.375f);
            for (size_t i = 0; i < w.size(); ++i) {
                if (m[i] == -inf) {
                    EXPECT_EQ(got[i], -inf) << i;
                } else if (std::isnan(w[i])) {
                    EXPECT_TRUE(std::isnan(got[i])) << i;
                } else {
                    EXPECT_EQ(got[i], w[i] * 0.375f + m[i]) << i;
                }
            }
        }
    }
}

TEST(RowLoops, ReductionsOfEverySetMatchFloat64AndEachOtherBitForBit) {
    std::mt19937 rng(12);
    for (int64_t n : kLengths) {
        const std::vector<float> x = random_floats(n, rng);
        double sum = 0.0, squares = 0.0, abs_sum = 0.0;
        float max = -std::numeric_limits<float>::infinity();
        for (float v : x) {
            sum += v;
            abs_sum += std::fabs(v);
            squares += static_cast<double>(v) * v;
            max = std::max(max, v);
        }
        const float mean = n > 0 ? static_cast<float>(sum / static_cast<double>(n)) : 0.0f;
        double centered = 0.0;
        for (float v : x) centered += (static_cast<double>(v) - mean) * (static_cast<double>(v) - mean);
        const RowLoops& first = row_loops(supported_isas()[0]);
        std::vector<float> first_y(x.size());
        const double first_center = first.center(x.data(), first_y.data(), n, mean);
        for (Isa isa : supported_isas()) {
            SCOPED_TRACE(trace(isa, n));
            const RowLoops& loops = row_loops(isa);
            expect_close(loops.sum(x.data(), n), sum, abs_sum);
            expect_close(loops.sum_squares(x.data(), n), squares, squares);
            EXPECT_EQ(loops.max(x.data(), n), max);
            std::vector<float> y = x;  // in place
            const double c = loops.center(y.data(), y.data(), n, mean);
            expect_close(c, centered, squares);
            for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], x[i] - mean) << i;
            // The same order of additions in every set.
            EXPECT_EQ(loops.sum(x.data(), n), first.sum(x.data(), n));
            EXPECT_EQ(loops.sum_squares(x.data(), n), first.sum_squares(x.data(), n));
            EXPECT_EQ(c, first_center);
        }
    }
}

// The recurrent kernels' dot product (products and sum in double) and axpy (y += x a, in f32).
TEST(RowLoops, DotAndAxpyOfEverySetMatchFloat64AndEachOtherBitForBit) {
    std::mt19937 rng(14);
    for (int64_t n : kLengths) {
        const std::vector<float> x = random_floats(n, rng), y = random_floats(n, rng);
        double dot = 0.0, abs_dot = 0.0;
        for (size_t i = 0; i < x.size(); ++i) {
            dot += static_cast<double>(x[i]) * y[i];
            abs_dot += std::fabs(static_cast<double>(x[i]) * y[i]);
        }
        const RowLoops& first = row_loops(supported_isas()[0]);
        for (Isa isa : supported_isas()) {
            SCOPED_TRACE(trace(isa, n));
            const RowLoops& loops = row_loops(isa);
            // Exact products: only the double sum's order rounds.
            EXPECT_NEAR(loops.dot(x.data(), y.data(), n), dot, 1e-13 * (abs_dot + 1.0));
            EXPECT_EQ(loops.dot(x.data(), y.data(), n), first.dot(x.data(), y.data(), n));
            std::vector<float> acc = y;
            loops.axpy(x.data(), acc.data(), n, -0.625f);
            for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(acc[i], y[i] + x[i] * -0.625f) << i;
        }
    }
}

// Mamba-2's scan step: the state row updated as s * decay + b a element by element in f32, and its
// dot with c in double, the same bits in every set.
TEST(RowLoops, ScanStepOfEverySetMatchesTheElementwiseUpdateAndEachOtherBitForBit) {
    std::mt19937 rng(15);
    for (int64_t n : kLengths) {
        const std::vector<float> s0 = random_floats(n, rng), b = random_floats(n, rng), c = random_floats(n, rng);
        std::vector<float> want = s0;
        double dot = 0.0, abs_dot = 0.0;
        for (size_t i = 0; i < want.size(); ++i) {
            want[i] = s0[i] * 0.875f + b[i] * -1.25f;
            dot += static_cast<double>(want[i]) * c[i];
            abs_dot += std::fabs(static_cast<double>(want[i]) * c[i]);
        }
        std::vector<float> first_state = s0;
        const double first = row_loops(supported_isas()[0]).scan_step(first_state.data(), b.data(), c.data(), n, 0.875f, -1.25f);
        for (Isa isa : supported_isas()) {
            SCOPED_TRACE(trace(isa, n));
            std::vector<float> st = s0;
            const double got = row_loops(isa).scan_step(st.data(), b.data(), c.data(), n, 0.875f, -1.25f);
            EXPECT_EQ(st, want);
            EXPECT_NEAR(got, dot, 1e-13 * (abs_dot + 1.0));
            EXPECT_EQ(got, first);
        }
    }
}

// A row's maximum is NaN when any element is, wherever it lies (a lane's first or last element, the
// tail, before or after the largest value): flash attention tells a row with a NaN score by it.
TEST(RowLoops, MaxIsNaNWhenAnyElementIsAndMinusInfinityWhenEmpty) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (Isa isa : supported_isas()) {
        SCOPED_TRACE(isa_name(isa));
        const RowLoops& loops = row_loops(isa);
        EXPECT_EQ(loops.max(nullptr, 0), -std::numeric_limits<float>::infinity());
        std::vector<float> x(37, -3.0f);
        x[17] = 2.5f;
        EXPECT_EQ(loops.max(x.data(), 37), 2.5f);
        for (size_t at = 0; at < x.size(); ++at) {
            std::vector<float> poisoned = x;
            poisoned[at] = nan;
            EXPECT_TRUE(std::isnan(loops.max(poisoned.data(), 37))) << "NaN at " << at;
        }
    }
}

TEST(RowLoops, RopeRotationsOfEverySetMatchFloat64) {
    std::mt19937 rng(13);
    for (Isa isa : supported_isas()) {
        const RowLoops& loops = row_loops(isa);
        for (int64_t n_dims : {2, 6, 16, 64, 130}) {
            SCOPED_TRACE(trace(isa, n_dims));
            const std::vector<float> x = random_floats(n_dims, rng);
            std::vector<float> cache(static_cast<size_t>(n_dims));
            for (int64_t i = 0; i < n_dims; i += 2) {
                const float angle = 0.37f * static_cast<float>(i + 1);
                cache[static_cast<size_t>(i)] = std::cos(angle);
                cache[static_cast<size_t>(i) + 1] = std::sin(angle);
            }
            std::vector<float> y = x;  // in place
            loops.rope_normal(y.data(), y.data(), cache.data(), n_dims);
            for (int64_t i = 0; i < n_dims; i += 2) {
                const double c = cache[static_cast<size_t>(i)], s = cache[static_cast<size_t>(i) + 1];
                const double x0 = x[static_cast<size_t>(i)], x1 = x[static_cast<size_t>(i) + 1];
                EXPECT_NEAR(y[static_cast<size_t>(i)], x0 * c - x1 * s, 1e-6) << i;
                EXPECT_NEAR(y[static_cast<size_t>(i) + 1], x0 * s + x1 * c, 1e-6) << i;
            }
            loops.rope_neox(x.data(), y.data(), cache.data(), n_dims);
            const int64_t half = n_dims / 2;
            for (int64_t i = 0; i < half; ++i) {
                const double c = cache[static_cast<size_t>(2 * i)], s = cache[static_cast<size_t>(2 * i) + 1];
                const double x0 = x[static_cast<size_t>(i)], x1 = x[static_cast<size_t>(i + half)];
                EXPECT_NEAR(y[static_cast<size_t>(i)], x0 * c - x1 * s, 1e-6) << i;
                EXPECT_NEAR(y[static_cast<size_t>(i + half)], x0 * s + x1 * c, 1e-6) << i;
            }
        }
    }
}

// The same operations in the same order in every set (no FMA contraction): identical bits.
TEST(RowLoops, EverySetGivesTheSameBits) {
    std::mt19937 rng(15);
    const int64_t n = 1031;
    const std::vector<float> x = random_floats(n, rng), y = random_floats(n, rng, 0.5f, 2.0f);
    const auto outputs = [&](const RowLoops& loops) {
        std::vector<std::vector<float>> out(8, std::vector<float>(static_cast<size_t>(n)));
        loops.scale(x.data(), out[0].data(), n, 0.3f, 0.1f);
        for (int op = 0; op < 4; ++op) loops.binary[op](x.data(), y.data(), out[1 + op].data(), n);
        loops.scale_add(x.data(), y.data(), out[5].data(), n, 0.125f, -0.7f);
        loops.rope_normal(x.data(), out[6].data(), y.data(), 128);
        loops.rope_neox(x.data(), out[7].data(), y.data(), 128);
        return out;
    };
    const auto first = outputs(row_loops(supported_isas()[0]));
    for (Isa isa : supported_isas()) {
        SCOPED_TRACE(isa_name(isa));
        const auto got = outputs(row_loops(isa));
        for (size_t k = 0; k < got.size(); ++k) EXPECT_EQ(got[k], first[k]) << "output " << k;
    }
}

// rope's cache: cos and sin interleaved, within 2 ulp of 1 of float64 wherever the vector path
// applies (|x| <= 8192) and through libm beyond it, infinities and NaN included.
TEST(RowKernels, SinCosOfEverySetMatchesFloat64) {
    std::mt19937 rng(16);
    std::vector<float> x = random_floats(1027, rng, -8192.0f, 8192.0f);
    for (float v : {0.0f, -0.0f, 1e-30f, 0.78539816f, 1.5707964f, 3.1415927f, 8192.0f, -8192.0f, 8192.5f, 1e6f, -3e7f})
        x.push_back(v);
    x.push_back(std::numeric_limits<float>::infinity());
    x.push_back(std::numeric_limits<float>::quiet_NaN());
    const int64_t n = static_cast<int64_t>(x.size());
    for (Isa isa : supported_isas()) {
        SCOPED_TRACE(isa_name(isa));
        std::vector<float> cs(static_cast<size_t>(2 * n));
        row_kernels(isa).sincos(x.data(), cs.data(), n);
        for (size_t i = 0; i < x.size(); ++i) {
            if (!std::isfinite(x[i])) {
                EXPECT_TRUE(std::isnan(cs[2 * i]) && std::isnan(cs[2 * i + 1])) << x[i];
                continue;
            }
            EXPECT_NEAR(cs[2 * i], std::cos(static_cast<double>(x[i])), 2.4e-7) << "cos " << x[i];
            EXPECT_NEAR(cs[2 * i + 1], std::sin(static_cast<double>(x[i])), 2.4e-7) << "sin " << x[i];
        }
    }
}

// soft_max's pass: v = exp(v - max) and the sum, with -inf elements (masked) giving 0.
TEST(RowKernels, ExpSumOfEverySetMatchesFloat64) {
    std::mt19937 rng(14);
    for (Isa isa : supported_isas()) {
        for (int64_t n : kLengths) {
            SCOPED_TRACE(trace(isa, n));
            std::vector<float> v = random_floats(n, rng, -20.0f, 5.0f);
            if (n > 3) v[2] = -std::numeric_limits<float>::infinity();
            const std::vector<float> x = v;
            const float max = 5.0f;
            const double sum = row_kernels(isa).exp_sum(v.data(), n, max);
            double want_sum = 0.0;
            for (size_t i = 0; i < x.size(); ++i) {
                // The argument as the kernel forms it, in float: the test measures exp alone.
                const double want = std::exp(static_cast<double>(x[i] - max));
                want_sum += want;
                EXPECT_NEAR(v[i], want, 4e-7 * want + 1e-30) << i;
            }
            EXPECT_NEAR(sum, want_sum, 1e-6 * (want_sum + 1e-30));
        }
    }
}

}  // namespace
}  // namespace xb::cpu_kernels
