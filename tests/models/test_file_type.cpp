// A model file's type named as llama.cpp names it (models/file_type.hpp): general.file_type's name,
// or the guess from the type most tensors have, as llama-bench's model column shows it.
#include <gtest/gtest.h>

#include "formats/gguf.hpp"
#include "model_fixtures.hpp"
#include "models/file_type.hpp"

namespace xb {
namespace {

TEST(FileType, NamesAreLlamaCpps) {
    EXPECT_EQ(llama_file_type_name(0), "all F32");
    EXPECT_EQ(llama_file_type_name(1), "F16");
    EXPECT_EQ(llama_file_type_name(7), "Q8_0");
    EXPECT_EQ(llama_file_type_name(15), "Q4_K - Medium");
    EXPECT_EQ(llama_file_type_name(18), "Q6_K");
    EXPECT_EQ(llama_file_type_name(32), "BF16");
    EXPECT_EQ(llama_file_type_name(38), "MXFP4 MoE");
    EXPECT_EQ(llama_file_type_name(4), "unknown, may not work");  // a value llama.cpp removed
    EXPECT_EQ(llama_file_type_name(1024), "unknown, may not work");
}

// The fixtures carry no general.file_type: the type most tensors have, marked as a guess.
TEST(FileType, WithoutTheKeyTheTypeOfMostTensorsIsGuessed) {
    auto tied = GgufReader::open(config::testing::model_path("tiny-llama-tied.gguf"));  // 15 f16 tensors, 5 f32
    ASSERT_TRUE(tied.is_ok()) << tied.status().to_string();
    ASSERT_EQ(tied->find_kv_entry("general.file_type"), nullptr);
    EXPECT_EQ(gguf_file_type_name(*tied), "(guessed) F16");
    auto f32 = GgufReader::open(config::testing::model_path("tiny-llama.gguf"));
    ASSERT_TRUE(f32.is_ok());
    EXPECT_EQ(gguf_file_type_name(*f32), "(guessed) all F32");
}

}  // namespace
}  // namespace xb
