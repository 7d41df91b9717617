// Messages fit for one line whatever they quote (core/message_text.hpp): a name read from a model
// file may be a megabyte long or hold a newline and a terminal escape sequence.
#include <gtest/gtest.h>

#include <string>

#include "core/message_text.hpp"

namespace xb {
namespace {

TEST(MessageText, ControlCharactersAreEscapedAndUtf8Kept) {
    EXPECT_EQ(escape_controls("a\nb\r\tc\x1b[31m\x7f"), "a\\nb\\r\\tc\\x1b[31m\\x7f");
    EXPECT_EQ(escape_controls("caf\xc3\xa9 \xe2\x86\x92 ok"), "caf\xc3\xa9 \xe2\x86\x92 ok");  // é and an arrow stay
    EXPECT_EQ(escape_controls("\xc2\x9b" "2J"), "\\u009b2J");  // C1 CSI: a terminal escape in one character
    EXPECT_EQ(escape_controls("bad \xff\xc3 end"), "bad \\xff\\xc3 end");  // not UTF-8: each byte shown
    EXPECT_EQ(escape_controls("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate is not UTF-8 either
    EXPECT_EQ(escape_controls(std::string("nul\0byte", 8)), "nul\\x00byte");
}

TEST(MessageText, NamesAreCutAfterAFewDozenCharactersNeverInsideOne) {
    EXPECT_EQ(name_text("short"), "short");
    EXPECT_EQ(name_text(std::string(61, 'x')), std::string(60, 'x') + "...");
    EXPECT_EQ(name_text(std::string(60, 'x')), std::string(60, 'x'));
    // 59 ASCII characters and a two-byte one: the cut counts characters, not bytes.
    EXPECT_EQ(name_text(std::string(59, 'x') + "\xc3\xa9" + "yz"), std::string(59, 'x') + "\xc3\xa9...");
    EXPECT_EQ(quoted_name("a\nb"), "'a\\nb'");
}

TEST(MessageText, OneLineKeepsTheStartAndTheReason) {
    EXPECT_EQ(one_line("fine as it is"), "fine as it is");
    const std::string message = "x.gguf: tensor '" + std::string(1 << 20, 'n') + "\n' has no role in the graph";
    const std::string line = one_line(message);
    EXPECT_LE(line.size(), kMaxMessageChars);
    EXPECT_EQ(line.find('\n'), std::string::npos);
    EXPECT_EQ(line.rfind("x.gguf: tensor 'nnn", 0), 0u) << line.substr(0, 40);
    EXPECT_NE(line.find("\\n' has no role in the graph"), std::string::npos) << line.substr(line.size() - 60);
    EXPECT_NE(line.find("characters left out"), std::string::npos);
    // Multi-byte characters are never split at either cut.
    std::string wide;
    for (int i = 0; i < 1000; ++i) wide += "\xe2\x86\x92";
    const std::string cut = one_line(wide);
    EXPECT_EQ(escape_controls(cut), cut) << "valid UTF-8 throughout";
}

}  // namespace
}  // namespace xb
