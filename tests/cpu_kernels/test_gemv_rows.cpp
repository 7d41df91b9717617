// The one-token products' row walk follows the machine (gemv_rows.hpp): single rows on AMD, pairs
// elsewhere, XB_GEMV_ROWS overriding either way. That both walks give the same products is the op
// tests' (scripts/test runs the products' cases under each).
#include <gtest/gtest.h>

#include "cpu_kernels/gemv_rows.hpp"

namespace xb::cpu_kernels {
namespace {

TEST(GemvRows, FollowTheVendorUnlessForced) {
    EXPECT_EQ(choose_gemv_rows("AuthenticAMD", nullptr), GemvRows::Single);
    EXPECT_EQ(choose_gemv_rows("GenuineIntel", nullptr), GemvRows::Pairs);
    EXPECT_EQ(choose_gemv_rows("", nullptr), GemvRows::Pairs);
    EXPECT_EQ(choose_gemv_rows("AuthenticAMD", "2"), GemvRows::Pairs);
    EXPECT_EQ(choose_gemv_rows("GenuineIntel", "1"), GemvRows::Single);
    EXPECT_EQ(choose_gemv_rows("AuthenticAMD", "3"), GemvRows::Single);  // not a walk: the machine's
    EXPECT_EQ(choose_gemv_rows("GenuineIntel", ""), GemvRows::Pairs);
}

TEST(GemvRows, TheDescriptionSaysTheWalk) {
    const std::string text = gemv_rows_description();
    EXPECT_NE(text.find(gemv_rows() == GemvRows::Pairs ? "by row pairs" : "by single rows"), std::string::npos) << text;
}

}  // namespace
}  // namespace xb::cpu_kernels
