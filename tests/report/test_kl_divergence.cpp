// The KL-divergence statistics (lib/report/kl_divergence.hpp) on cases with closed forms: equal
// logits, a shifted copy, and a two-position sequence whose KLD, perplexities and Δp are written out
// here from their definitions; and the inputs it refuses.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "report/kl_divergence.hpp"

namespace xb::report {
namespace {

// softmax of a row, in double.
std::vector<double> softmax(const std::vector<float>& row) {
    double top = row[0];
    for (float v : row) top = std::max(top, static_cast<double>(v));
    std::vector<double> p(row.size());
    double sum = 0;
    for (size_t i = 0; i < row.size(); ++i) sum += p[i] = std::exp(row[i] - top);
    for (double& v : p) v /= sum;
    return p;
}

TEST(KlDivergence, EqualLogitsDivergeByNothing) {
    const std::vector<float> logits = {0.5f, -1.0f, 2.0f, 0.0f, 3.0f, 1.0f, -2.0f, 0.25f, 1.5f};
    const std::vector<int32_t> tokens = {0, 2, 1};
    auto s = kl_divergence(logits, logits, 3, tokens);
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    EXPECT_EQ(s->positions, 2);
    EXPECT_NEAR(s->kld_mean.value, 0.0, 1e-15);
    EXPECT_EQ(s->same_top.value, 1.0);
    EXPECT_EQ(s->delta_p_rms.value, 0.0);
    EXPECT_DOUBLE_EQ(s->ppl_ratio.value, 1.0);
    EXPECT_DOUBLE_EQ(s->ppl_base.value, s->ppl_target.value);
}

TEST(KlDivergence, MatchesTheDefinitionsOnTwoPositions) {
    // Vocabulary 3, three tokens (two scored positions).
    const std::vector<float> base = {1.0f, 0.0f, -1.0f, 0.5f, 0.5f, 2.0f, 0.0f, 0.0f, 0.0f};
    const std::vector<float> target = {0.0f, 1.0f, -1.0f, 0.5f, 0.7f, 1.9f, 3.0f, 3.0f, 3.0f};
    const std::vector<int32_t> tokens = {2, 1, 0};  // position 0 is scored on token 1, position 1 on token 0
    auto s = kl_divergence(base, target, 3, tokens);
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    double kld[2], nll_b[2], nll_t[2], dp[2];
    for (int i = 0; i < 2; ++i) {
        const std::vector<double> p = softmax({base.begin() + 3 * i, base.begin() + 3 * i + 3});
        const std::vector<double> q = softmax({target.begin() + 3 * i, target.begin() + 3 * i + 3});
        kld[i] = 0;
        for (int v = 0; v < 3; ++v) kld[i] += p[v] * std::log(p[v] / q[v]);
        const int next = tokens[i + 1];
        nll_b[i] = -std::log(p[next]);
        nll_t[i] = -std::log(q[next]);
        dp[i] = q[next] - p[next];
    }
    EXPECT_NEAR(s->kld_mean.value, (kld[0] + kld[1]) / 2, 1e-12);
    EXPECT_NEAR(s->kld_max, std::max(kld[0], kld[1]), 1e-12);
    EXPECT_NEAR(s->ppl_base.value, std::exp((nll_b[0] + nll_b[1]) / 2), 1e-12);
    EXPECT_NEAR(s->ppl_target.value, std::exp((nll_t[0] + nll_t[1]) / 2), 1e-12);
    EXPECT_NEAR(s->ppl_ratio.value, s->ppl_target.value / s->ppl_base.value, 1e-12);
    EXPECT_NEAR(s->delta_p_mean.value, (dp[0] + dp[1]) / 2, 1e-12);
    EXPECT_NEAR(s->delta_p_rms.value, std::sqrt((dp[0] * dp[0] + dp[1] * dp[1]) / 2), 1e-12);
    EXPECT_EQ(s->same_top.value, 0.5);  // position 0: 0 vs 1; position 1: 2 vs 2
    // Standard error of the mean of two values: |a - b| / 2.
    EXPECT_NEAR(s->kld_mean.uncertainty, std::abs(kld[0] - kld[1]) / 2, 1e-12);
}

TEST(KlDivergence, AShiftOfEveryLogitChangesNothing) {
    std::vector<float> base(5 * 4), shifted(5 * 4);
    for (size_t i = 0; i < base.size(); ++i) {
        base[i] = std::round(std::sin(static_cast<float>(i)) * 1024.0f) / 1024.0f;  // exact after the shift too
        shifted[i] = base[i] + 7.0f;
    }
    auto s = kl_divergence(base, shifted, 5, std::vector<int32_t>{1, 2, 3, 4});
    ASSERT_TRUE(s.is_ok());
    EXPECT_LT(s->kld_mean.value, 1e-12);
    EXPECT_NEAR(s->ppl_ratio.value, 1.0, 1e-12);
}

TEST(KlDivergence, RefusesInputsThatDoNotFit) {
    const std::vector<float> two(6, 0.0f);
    EXPECT_EQ(kl_divergence(two, two, 3, std::vector<int32_t>{0}).status().code(), StatusCode::InvalidArgument);
    EXPECT_EQ(kl_divergence(two, two, 3, std::vector<int32_t>{0, 1, 2}).status().code(), StatusCode::InvalidArgument);
    const auto outside = kl_divergence(two, two, 3, std::vector<int32_t>{0, 3});
    EXPECT_NE(outside.status().message().find("outside the vocabulary"), std::string::npos) << outside.status().message();
    std::vector<float> nan = two;
    nan[4] = std::numeric_limits<float>::quiet_NaN();
    const auto bad = kl_divergence(two, nan, 3, std::vector<int32_t>{0, 1});
    EXPECT_NE(bad.status().message().find("target logits hold a NaN"), std::string::npos) << bad.status().message();
}

TEST(KlDivergence, TheTableHasLlamaPerplexitysRows) {
    const std::vector<float> logits = {0.5f, -1.0f, 2.0f, 0.0f, 3.0f, 1.0f};
    auto s = kl_divergence(logits, logits, 3, std::vector<int32_t>{0, 2});
    ASSERT_TRUE(s.is_ok());
    const Table t = kld_table(*s);
    std::vector<std::string> names;
    for (const auto& row : t.rows()) names.push_back(std::get<std::string>(row[0]));
    for (const char* want : {"Mean PPL(Q)", "Mean KLD", "99.9% KLD", "Median KLD", "RMS Δp %", "Same top p %"}) {
        EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
    }
}

}  // namespace
}  // namespace xb::report
