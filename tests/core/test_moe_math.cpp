// op_math.hpp's XB_HD math of the MoE and gpt-oss ops, run on the CPU (the CUDA kernels call the
// same functions): swiglu_oai's clamps, argsort_before's total order (ties by index, NaN last in
// both orders), and fold_sink's join of an attention sink into a finished online softmax.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "core/op_math.hpp"

namespace xb {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

double swiglu_oai_ref(double x, double g, double alpha, double limit) {
    x = std::min(x, limit);
    g = std::clamp(g, -limit, limit);
    return x / (1.0 + std::exp(-alpha * x)) * (g + 1.0);
}

TEST(MoeMath, SwigluOaiClampsBothHalves) {
    const float alpha = 1.702f, limit = 7.0f;
    for (float x : {-20.0f, -7.5f, -1.0f, 0.25f, 6.9f, 7.0f, 9.0f, 50.0f}) {
        for (float g : {-30.0f, -7.0f, -0.5f, 0.0f, 3.0f, 7.0f, 12.0f}) {
            const double want = swiglu_oai_ref(x, g, alpha, limit);
            EXPECT_NEAR(swiglu_oai_f32(x, g, alpha, limit), want, 1e-5 * (1.0 + std::abs(want))) << x << " " << g;
            EXPECT_NEAR(fast_swiglu_oai_f32(x, g, alpha, limit), want, 1e-5 * (1.0 + std::abs(want))) << x << " " << g;
            EXPECT_NEAR(fast_glu_f32(GluOp::SwiGluOai, x, g, alpha, limit), want, 1e-5 * (1.0 + std::abs(want)));
        }
    }
    // Beyond the limit the output no longer depends on the input.
    EXPECT_EQ(swiglu_oai_f32(8.0f, 9.0f, alpha, limit), swiglu_oai_f32(100.0f, 1e6f, alpha, limit));
    // A NaN in either half stays NaN, in both forms (std::min and std::clamp, as ggml's CPU has them;
    // fminf/fmaxf would put the limit in its place).
    EXPECT_TRUE(std::isnan(swiglu_oai_f32(kNaN, 1.0f, alpha, limit)));
    EXPECT_TRUE(std::isnan(swiglu_oai_f32(1.0f, kNaN, alpha, limit)));
    EXPECT_TRUE(std::isnan(fast_swiglu_oai_f32(kNaN, 1.0f, alpha, limit)));
    EXPECT_TRUE(std::isnan(fast_swiglu_oai_f32(1.0f, kNaN, alpha, limit)));
}

TEST(MoeMath, FastGluKeepsTheOtherOps) {
    for (float x : {-3.0f, -0.5f, 0.0f, 2.0f}) {
        EXPECT_EQ(fast_glu_f32(GluOp::SwiGlu, x, 1.5f, 0.0f, 0.0f), fast_glu_activation_f32(GluOp::SwiGlu, x) * 1.5f);
        EXPECT_EQ(fast_glu_f32(GluOp::GeGlu, x, -2.0f, 0.0f, 0.0f), fast_glu_activation_f32(GluOp::GeGlu, x) * -2.0f);
    }
}

std::vector<int> sorted_indices(const std::vector<float>& v, SortOrder order) {
    std::vector<int> idx(v.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::sort(idx.begin(), idx.end(), [&](int a, int b) { return argsort_before(order, v[a], a, v[b], b); });
    return idx;
}

TEST(MoeMath, ArgsortBeforeOrdersTiesByIndexAndNaNLast) {
    const std::vector<float> v = {0.5f, kNaN, -1.0f, 0.5f, 2.0f, kNaN, -1.0f, 0.5f};
    EXPECT_EQ(sorted_indices(v, SortOrder::Ascending), (std::vector<int>{2, 6, 0, 3, 7, 4, 1, 5}));
    EXPECT_EQ(sorted_indices(v, SortOrder::Descending), (std::vector<int>{4, 0, 3, 7, 2, 6, 1, 5}));
    // Infinities are numbers: before NaN.
    const std::vector<float> w = {kNaN, -INFINITY, INFINITY};
    EXPECT_EQ(sorted_indices(w, SortOrder::Ascending), (std::vector<int>{1, 2, 0}));
    EXPECT_EQ(sorted_indices(w, SortOrder::Descending), (std::vector<int>{2, 1, 0}));
}

TEST(MoeMath, ArgsortBeforeIsAStrictTotalOrder) {
    const std::vector<float> v = {1.0f, kNaN, 1.0f, -0.0f, 0.0f, kNaN, -3.0f};
    for (SortOrder order : {SortOrder::Ascending, SortOrder::Descending}) {
        for (int a = 0; a < static_cast<int>(v.size()); ++a) {
            EXPECT_FALSE(argsort_before(order, v[a], a, v[a], a));
            for (int b = 0; b < static_cast<int>(v.size()); ++b) {
                if (a == b) continue;
                // Exactly one of the two comes first.
                EXPECT_NE(argsort_before(order, v[a], a, v[b], b), argsort_before(order, v[b], b, v[a], a)) << a << " " << b;
            }
        }
    }
}

// The finished row (max m, sum l) with the sink folded in, against the softmax of the scores plus
// the sink computed whole in double: the accumulator scale over the new sum is each weight's factor.
TEST(MoeMath, FoldSinkJoinsTheNormaliser) {
    const std::vector<float> scores = {0.3f, -1.2f, 2.0f, 0.7f};
    for (float sink : {-5.0f, 0.0f, 1.9f, 2.0f, 6.0f}) {
        const float m = *std::max_element(scores.begin(), scores.end());
        float l = 0.0f;
        for (float s : scores) l += std::exp(s - m);
        const SinkFold f = fold_sink(m, l, sink);
        double total = std::exp(static_cast<double>(sink));
        for (float s : scores) total += std::exp(static_cast<double>(s));
        for (float s : scores) {
            const double got = std::exp(static_cast<double>(s - m)) * f.scale / f.sum;
            EXPECT_NEAR(got, std::exp(static_cast<double>(s)) / total, 1e-6) << sink;
        }
    }
}

TEST(MoeMath, FoldSinkEdgeCases) {
    // No sink (-inf): nothing changes.
    const SinkFold none = fold_sink(1.5f, 3.0f, -INFINITY);
    EXPECT_EQ(none.scale, 1.0f);
    EXPECT_EQ(none.sum, 3.0f);
    // Every key masked out (m = -inf, l = 0): scale 0, sum 1, so the row is zeros, not NaN.
    const SinkFold masked = fold_sink(-INFINITY, 0.0f, 0.7f);
    EXPECT_EQ(masked.scale, 0.0f);
    EXPECT_EQ(masked.sum, 1.0f);
    // A sink far above every score takes nearly all the weight.
    const SinkFold big = fold_sink(0.0f, 2.0f, 30.0f);
    EXPECT_LT(big.scale * 2.0f / big.sum, 1e-12f);
}

}  // namespace
}  // namespace xb
