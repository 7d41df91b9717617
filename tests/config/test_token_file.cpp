// Token files (lib/config/token_file.hpp): the two forms users have (a JSON array as llama-tokenize
// writes, one id a line), and one clear error for everything else.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "config/token_file.hpp"

namespace xb::config {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
    const std::string path = ::testing::TempDir() + name;
    std::ofstream(path) << text;
    return path;
}

TEST(TokenFile, ReadsAJsonArrayAndOneIdALine) {
    auto json = read_token_file(write_temp("tokens.json", "[2, 818, 5279]\n"));
    ASSERT_TRUE(json.is_ok()) << json.status().to_string();
    EXPECT_EQ(*json, (std::vector<int32_t>{2, 818, 5279}));
    auto lines = read_token_file(write_temp("tokens.txt", "2\n818\n\n5279\n"));
    ASSERT_TRUE(lines.is_ok()) << lines.status().to_string();
    EXPECT_EQ(*lines, (std::vector<int32_t>{2, 818, 5279}));
    auto list = parse_token_list("2,818,5279");
    ASSERT_TRUE(list.is_ok());
    EXPECT_EQ(*list, (std::vector<int32_t>{2, 818, 5279}));
}

TEST(TokenFile, SaysWhatIsWrongInOneLine) {
    struct Case {
        std::string text, message;
    };
    for (const Case& c : {Case{"", "the token file is empty"}, Case{"  \n\n", "the token file is empty"},
                          Case{"12\nhello\n", "line 2: 'hello' is not a token id"},
                          Case{"-3\n", "token id -3 is out of range"}, Case{"[1, 2.5]", "entry 1 is 2.5, not a token id"},
                          Case{"[1, 2", "not valid JSON"}, Case{"[]", "holds no token ids"},
                          Case{"99999999999", "out of range"}}) {
        auto ids = read_token_file(write_temp("bad.tokens", c.text));
        ASSERT_FALSE(ids.is_ok()) << c.text;
        EXPECT_EQ(ids.status().code(), StatusCode::InvalidArgument);
        EXPECT_NE(ids.status().message().find(c.message), std::string::npos) << ids.status().message();
        EXPECT_EQ(ids.status().message().find('\n'), std::string::npos);
    }
    EXPECT_EQ(read_token_file(::testing::TempDir() + "no-such-file").status().code(), StatusCode::NotFound);
    EXPECT_FALSE(parse_token_list("1,,2").is_ok());
    EXPECT_FALSE(parse_token_list("1,x").is_ok());
}

}  // namespace
}  // namespace xb::config
