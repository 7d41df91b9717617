// The one-token products' row walk follows the machine (gemv_rows.hpp): on AMD single rows while
// the activations take a quarter of the L1d and 8 rows beyond, pairs elsewhere, XB_GEMV_ROWS
// overriding either way. That every walk gives the same products is the row kernels' test (each
// row count gives every row dot's bits) and the op tests' (scripts/test runs the products' cases
// under each).
#include <gtest/gtest.h>

#include "cpu_kernels/gemv_rows.hpp"

namespace xb::cpu_kernels {
namespace {

TEST(GemvRows, FollowTheVendorAndTheL1UnlessForced) {
    const GemvWalk zen4 = choose_gemv_walk("AuthenticAMD", size_t{32} << 10, nullptr);
    EXPECT_EQ(zen4.rows_for(1), 1);
    EXPECT_EQ(zen4.rows_for(2048), 1);  // 8 KiB of activations
    EXPECT_EQ(zen4.rows_for(2049), 8);
    EXPECT_EQ(zen4.rows_for(8192), 8);
    const GemvWalk big_l1 = choose_gemv_walk("AuthenticAMD", size_t{64} << 10, nullptr);
    EXPECT_EQ(big_l1.rows_for(4096), 1);
    EXPECT_EQ(big_l1.rows_for(4097), 8);
    EXPECT_EQ(choose_gemv_walk("AuthenticAMD", 0, nullptr).short_k, 2048);  // unknown: 32 KiB
    for (int64_t k : {64, 2048, 8192}) {
        EXPECT_EQ(choose_gemv_walk("GenuineIntel", size_t{48} << 10, nullptr).rows_for(k), 2);
        EXPECT_EQ(choose_gemv_walk("", 0, nullptr).rows_for(k), 2);
        EXPECT_EQ(choose_gemv_walk("AuthenticAMD", size_t{32} << 10, "2").rows_for(k), 2);
        EXPECT_EQ(choose_gemv_walk("GenuineIntel", 0, "1").rows_for(k), 1);
        EXPECT_EQ(choose_gemv_walk("GenuineIntel", 0, "4").rows_for(k), 4);
        EXPECT_EQ(choose_gemv_walk("AuthenticAMD", 0, "8").rows_for(k), 8);
        EXPECT_EQ(choose_gemv_walk("GenuineIntel", 0, "16").rows_for(k), 2);  // not a walk: the machine's
        EXPECT_EQ(choose_gemv_walk("GenuineIntel", 0, "").rows_for(k), 2);
    }
    EXPECT_EQ(choose_gemv_walk("AuthenticAMD", size_t{32} << 10, "3").rows_for(8192), 8);
}

TEST(GemvRows, TheDescriptionSaysTheWalk) {
    const std::string text = gemv_walk_description();
    const GemvWalk& walk = gemv_walk();
    const auto says = [](int rows) { return rows == 1 ? std::string("single rows") : rows == 2 ? std::string("row pairs") : std::to_string(rows) + " rows"; };
    EXPECT_NE(text.find("by " + says(walk.rows)), std::string::npos) << text;
    if (walk.long_rows != walk.rows) {
        EXPECT_NE(text.find(says(walk.long_rows) + " beyond"), std::string::npos) << text;
    }
}

}  // namespace
}  // namespace xb::cpu_kernels
