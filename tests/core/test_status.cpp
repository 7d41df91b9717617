// Status and Result: the error type every fallible call returns.
#include <gtest/gtest.h>

#include "core/status.hpp"

namespace xb {
namespace {

TEST(Result, HoldsAValueOrTheStatusThatExplainsItsAbsence) {
    Result<int> good = 3;
    ASSERT_TRUE(good.is_ok());
    EXPECT_EQ(good.value(), 3);
    EXPECT_TRUE(good.status().is_ok());
    Result<int> bad = Status(StatusCode::NotFound, "no such device 'CUDA7'");
    EXPECT_FALSE(bad.is_ok());
    EXPECT_EQ(bad.status().code(), StatusCode::NotFound);
    Result<int> from_ok = Status::ok();  // a programmer error turned into a status, not a crash
    EXPECT_EQ(from_ok.status().code(), StatusCode::Internal);
}

TEST(ResultDeathTest, TheValueOfAnErrorAbortsWithItsMessage) {
    testing::FLAGS_gtest_death_test_style = "threadsafe";
    Result<int> bad = Status(StatusCode::NotFound, "no such device 'CUDA7'");
    EXPECT_DEATH(static_cast<void>(bad.value()), "NotFound: no such device 'CUDA7'");
}

}  // namespace
}  // namespace xb
