// The tests find configs/ and tests/data/ through repo_root(): the folder they were built from, or
// $XB_SOURCE_DIR, which a build carried to another machine needs (scripts/gpu-check sets it to the
// tree there, where the build's own folder does not exist).
#include <gtest/gtest.h>

#include <cstdlib>

#include "test_config_util.hpp"

namespace xb::config {
namespace {

TEST(RepoRoot, FollowsXbSourceDirWhenSet) {
    const char* before = std::getenv("XB_SOURCE_DIR");
    const std::string saved = before != nullptr ? before : "";
    ASSERT_EQ(setenv("XB_SOURCE_DIR", "/elsewhere/xbackend", 1), 0);
    EXPECT_EQ(testing::repo_root(), std::filesystem::path("/elsewhere/xbackend"));
    EXPECT_EQ(testing::data_path("x.gguf"), "/elsewhere/xbackend/tests/data/x.gguf");
    ASSERT_EQ(setenv("XB_SOURCE_DIR", "", 1), 0);  // empty: the folder built from
    EXPECT_EQ(testing::repo_root(), std::filesystem::path(XB_SOURCE_DIR));
    if (before != nullptr) {
        setenv("XB_SOURCE_DIR", saved.c_str(), 1);
    } else {
        unsetenv("XB_SOURCE_DIR");
    }
}

}  // namespace
}  // namespace xb::config
