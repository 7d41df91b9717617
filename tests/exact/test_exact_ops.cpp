// Self-checks of the float64 reference (lib/opcheck/reference.hpp) on inputs whose results are
// known in closed form: the conformance tests trust it, so it is checked on its own first.
#include <cmath>

#include "op_test_util.hpp"

namespace xbt {

namespace {

TEST(OpReference, PermuteMovesDimIToAxesI) {
    RefArray a({2, 3, 4, 1});
    for (int64_t i = 0; i < a.size(); ++i) a[i] = static_cast<double>(i);
    const RefArray p = exact::permute(a, {2, 0, 1, 3});
    EXPECT_EQ(p.ne(), (Shape{3, 4, 2, 1}));
    for_each_index(a.ne(),
                   [&](int64_t i0, int64_t i1, int64_t i2, int64_t) { EXPECT_EQ(p.at(i1, i2, i0), a.at(i0, i1, i2)); });
}

TEST(OpReference, SoftMaxRowsSumToOneAndKeepOrder) {
    RefArray a({5, 3, 1, 1});
    for (int64_t i = 0; i < a.size(); ++i) a[i] = std::sin(static_cast<double>(i));
    const RefArray s = exact::soft_max(a, nullptr, 1.0, 0.0);
    for (int64_t r = 0; r < 3; ++r) {
        double total = 0.0;
        for (int64_t c = 0; c < 5; ++c) total += s.at(c, r);
        EXPECT_NEAR(total, 1.0, 1e-15);
        EXPECT_EQ(s.at(0, r) < s.at(1, r), a.at(0, r) < a.at(1, r));
    }
}

TEST(OpReference, AlibiSlopesFollowTheTwoGeometricSeries) {
    // 6 heads: n_head_log2 = 4, m0 = 2^-2, m1 = 2^-1 for max_bias 8.
    EXPECT_DOUBLE_EQ(exact::alibi_slope(0, 6, 8.0), 0.25);
    EXPECT_DOUBLE_EQ(exact::alibi_slope(3, 6, 8.0), std::pow(0.25, 4));
    EXPECT_DOUBLE_EQ(exact::alibi_slope(4, 6, 8.0), 0.5);
    EXPECT_DOUBLE_EQ(exact::alibi_slope(5, 6, 8.0), std::pow(0.5, 3));
    EXPECT_DOUBLE_EQ(exact::alibi_slope(2, 6, 0.0), 1.0);
}

TEST(OpReference, RopeRotationPreservesPairNorms) {
    RefArray a({8, 1, 2, 1});
    for (int64_t i = 0; i < a.size(); ++i) a[i] = 0.1 * static_cast<double>(i + 1);
    const RefArray pos({2, 1, 1, 1}, {3.0, 17.0});
    xb::RopeParams p;
    p.n_dims = 6;
    const RefArray r = exact::rope(a, pos, p);
    for (int64_t t = 0; t < 2; ++t) {
        for (int64_t k = 0; k < 3; ++k) {
            const double before = std::hypot(a.at(2 * k, 0, t), a.at(2 * k + 1, 0, t));
            EXPECT_NEAR(std::hypot(r.at(2 * k, 0, t), r.at(2 * k + 1, 0, t)), before, 1e-14);
        }
        EXPECT_EQ(r.at(6, 0, t), a.at(6, 0, t));  // past n_dims: untouched
        EXPECT_EQ(r.at(7, 0, t), a.at(7, 0, t));
    }
}

TEST(OpReference, MulMatIsRowDotProducts) {
    const RefArray a({2, 2, 1, 1}, {1, 2, 3, 4});  // rows (1, 2) and (3, 4)
    const RefArray b({2, 1, 1, 1}, {5, 6});
    const RefArray c = exact::mul_mat(a, b);
    EXPECT_EQ(c.ne(), (Shape{2, 1, 1, 1}));
    EXPECT_EQ(c[0], 1 * 5 + 2 * 6);
    EXPECT_EQ(c[1], 3 * 5 + 4 * 6);
}

}  // namespace

}  // namespace xbt
