// Hostile GGUF models (round 2 of the hostile inputs): tensor data that overlaps or wraps, metadata
// that costs memory out of proportion, and what the messages say (one short line naming the file
// and the byte offset, also for a file given as the config), each finding a regression test. The
// files are the committed corpus of tests/data/models/hostile (scripts/hostile_fixtures.py writes
// it; its manifest says what each file must give); the tools' side is tests/tools/gguf_models.sh.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/gguf.hpp"
#include "models/gguf_model.hpp"
#include "core/message_text.hpp"
#include "test_config_util.hpp"

namespace xb::config {
namespace {

std::string hostile_path(const std::string& name) { return testing::data_path("models/hostile/" + name + ".gguf"); }

// What a tool does with `-c FILE`: the config loaded and its model built on the CPU.
Status open_as_config(const std::string& path) {
    XB_ASSIGN_OR_RETURN(ConfigSpec spec, load_config(path));
    BuildOptions options;
    options.backends = {"CPU"};
    return build_model(spec, global_registry(), options).status();
}

// --- GGUF files: data ranges -------------------------------------------------------------------------

TEST(HostileGguf2, TensorsSharingDataAreRefused) {
    for (const char* name : {"overlap-all-at-0", "overlap-partial"}) {
        auto r = GgufReader::open(hostile_path(name));
        ASSERT_FALSE(r.is_ok()) << name;
        EXPECT_NE(r.status().message().find("overlaps tensor"), std::string::npos) << r.status().message();
        EXPECT_NE(r.status().message().find(": offset "), std::string::npos) << r.status().message();
    }
    // Tensors in any order are fine as long as they do not overlap: the good file reversed.
    GgufWriter w;
    ASSERT_TRUE(w.add_tensor("a", DType::F32, {4, 1, 1, 1}, std::vector<std::byte>(16)).is_ok());
    ASSERT_TRUE(w.add_tensor("empty", DType::F32, {0, 1, 1, 1}, std::vector<std::byte>()).is_ok());
    ASSERT_TRUE(w.add_tensor("b", DType::F32, {4, 1, 1, 1}, std::vector<std::byte>(16)).is_ok());
    const std::string path = (std::filesystem::temp_directory_path() / "xb-overlap-ok.gguf").string();
    ASSERT_TRUE(w.write(path).is_ok());
    EXPECT_TRUE(GgufReader::open(path).is_ok()) << "a tensor of no bytes shares an offset with the next";
    std::filesystem::remove(path);
}

TEST(HostileGguf2, AWrappedOffsetIsPastTheEndNotARange) {
    auto r = GgufReader::open(hostile_path("offset-wraps"));
    ASSERT_FALSE(r.is_ok());
    const std::string m = r.status().message();
    EXPECT_NE(m.find("starts at data offset 18446744073709551584, past the end of the data section"), std::string::npos) << m;
    EXPECT_EQ(m.find("needs bytes ["), std::string::npos) << "no wrapped byte range: " << m;
}

// A 1.6 MB file that asked for a 7.5 GB buffer: every tensor the size of the whole data section,
// all at offset 0. Refused when read, before any weight is placed.
TEST(HostileGguf2, OverlappingWeightsCostNoMemory) {
    const Status s = open_as_config(hostile_path("overlap-all-at-0"));
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find("overlaps"), std::string::npos) << s.message();
}

// --- GGUF files: the memory metadata takes -------------------------------------------------------------

// `v` as `bytes` little-endian bytes at the end of `out`.
void le(std::string& out, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}

// GGUF v3 bytes: a header, key-values already serialised, no tensors.
std::string gguf_with_kvs(uint64_t n_kv, const std::string& kvs) {
    std::string out = "GGUF";
    le(out, 3, 4);
    le(out, 0, 8);
    le(out, n_kv, 8);
    return out + kvs;
}

std::string u8_array_kv(const std::string& key, uint64_t n) {
    std::string kv;
    le(kv, key.size(), 8);
    kv += key;
    le(kv, 9, 4);  // array
    le(kv, 0, 4);  // of u8
    le(kv, n, 8);
    return kv + std::string(n, '\1');
}

// Metadata split into many mid-size u8 arrays, each short enough to be kept (65,536 items), cost
// about 57 bytes of memory per byte of file: 64 MB took 3.8 GB. The memory is now counted as it is
// kept and the file refused past kMaxGgufHeaderMemory: here 2.3 MB of file.
TEST(HostileGguf2, MetadataMemoryIsBoundedAsAWhole) {
    const uint64_t per_array = 60000;
    const uint64_t n_arrays = kMaxGgufHeaderMemory / (per_array * sizeof(GgufValue)) + 2;
    std::string kvs;
    for (uint64_t i = 0; i < n_arrays; ++i) kvs += u8_array_kv("a" + std::to_string(i), per_array);
    const std::string file = gguf_with_kvs(n_arrays, kvs);
    ASSERT_LT(file.size(), size_t{4} << 20);
    auto r = GgufReader::parse(std::as_bytes(std::span(file.data(), file.size())), "many-arrays.gguf");
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find("take more than 64 MiB of memory"), std::string::npos) << r.status().message();
    // One array fewer than the limit's worth is kept in full.
    std::string fewer;
    const uint64_t fitting = n_arrays - 3;
    for (uint64_t i = 0; i < fitting; ++i) fewer += u8_array_kv("a" + std::to_string(i), per_array);
    const std::string ok = gguf_with_kvs(fitting, fewer);
    auto kept = GgufReader::parse(std::as_bytes(std::span(ok.data(), ok.size())), "fewer.gguf");
    ASSERT_TRUE(kept.is_ok()) << kept.status().to_string();
    EXPECT_EQ(kept->find_kv("a0")->as_array()->size(), per_array);
}

// The strings of a long array (a vocabulary) are read past, not kept: their bytes cost nothing.
TEST(HostileGguf2, StringsOfLongArraysAreNotKept) {
    std::string kv;
    const std::string key = "tokenizer.ggml.tokens";
    le(kv, key.size(), 8);
    kv += key;
    le(kv, 9, 4);
    le(kv, 8, 4);  // strings
    const uint64_t n = kMaxKeptArrayItems + 1;
    le(kv, n, 8);
    for (uint64_t i = 0; i < n; ++i) {
        le(kv, 1000, 8);
        kv += std::string(1000, 't');
    }
    const std::string file = gguf_with_kvs(1, kv);  // 66 MB of strings: past the budget if kept
    auto r = GgufReader::parse(std::as_bytes(std::span(file.data(), file.size())), "vocab.gguf");
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(r->find_kv(key)->array_length, n);
    EXPECT_TRUE(r->find_kv(key)->as_array()->empty());
}

// --- GGUF models: what the messages say -----------------------------------------------------------

TEST(HostileGguf2, EveryRefusedFileSaysWhereOnOneShortLine) {
    const nlohmann::json manifest = nlohmann::json::parse(std::ifstream(testing::data_path("models/hostile/manifest.json")));
    int refused = 0;
    for (const auto& [name, entry] : manifest.items()) {
        if (entry["exit"]["graph-run"] != 2) continue;
        SCOPED_TRACE(name);
        const Status s = open_as_config(hostile_path(name));
        ASSERT_FALSE(s.is_ok());
        const std::string& m = s.message();
        EXPECT_EQ(m.rfind(hostile_path(name) + ": ", 0), 0u) << "names the file first, no JSON pointer: " << m.substr(0, 200);
        EXPECT_EQ(m.find("/graph/"), std::string::npos) << m.substr(0, 200);
        EXPECT_NE(m.find(entry["stderr_has"].get<std::string>()), std::string::npos) << m.substr(0, 300);
        // One line of at most ~1,000 characters before the tools' one_line: names are cut, controls escaped.
        EXPECT_EQ(m.find('\n'), std::string::npos) << m.substr(0, 300);
        EXPECT_EQ(m.find('\x1b'), std::string::npos);
        EXPECT_LT(m.size(), kMaxMessageChars) << m.substr(0, 300);
        ++refused;
    }
    EXPECT_GE(refused, 10);
}

TEST(HostileGguf2, EveryErrorOfAModelFileGivenAsTheConfigHasAnOffset) {
    for (const char* name : {"rope-scaling-yarn", "u64-above-int64", "overlap-partial", "long-tensor-name"}) {
        const Status s = open_as_config(hostile_path(name));
        EXPECT_NE(s.message().find(".gguf: offset "), std::string::npos) << name << ": " << s.message();
    }
}

TEST(HostileGguf2, AnUnsignedAboveInt64IsOutOfRangeNotNotAnInteger) {
    const Status s = open_as_config(hostile_path("u64-above-int64"));
    EXPECT_NE(s.message().find("'llama.block_count' is 18446744073709551615, expected 1 to 1024"), std::string::npos)
        << s.message();
}

TEST(GgufValue, TextIsTheNumberAsStored) {
    EXPECT_EQ(GgufValue::u64(UINT64_MAX).text(), "18446744073709551615");
    EXPECT_EQ(GgufValue::i64(INT64_MIN).text(), "-9223372036854775808");
    EXPECT_EQ(GgufValue::f32(1e-5f).text(), "1e-05");
    EXPECT_EQ(GgufValue::f64(0.1).text(), "0.1");
    EXPECT_EQ(GgufValue::f32(std::nanf("")).text(), "nan");
    EXPECT_EQ(GgufValue::string("a\nb").text(), "'a\\nb'");
    EXPECT_EQ(GgufValue::array(GgufValueType::U8, {GgufValue::u32(1)}).text(), "an array of 1 u8");
}

// A vocabulary of one token: [n_embd, 1] with two dims (llama.cpp's writer) or one (xbackend's,
// which drops trailing 1s) was refused with "has shape [8, 1] ... need [8]".
TEST(HostileGguf2, AVocabularyOfOneTokenRuns) {
    for (const char* name : {"vocab-1-row", "vocab-1-row-1-dim"}) {
        SCOPED_TRACE(name);
        auto spec = load_config(hostile_path(name));
        ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
        auto model = build_model(*spec, global_registry());
        ASSERT_TRUE(model.is_ok()) << model.status().to_string();
        auto placed = testing::compute_alone(std::move(model).value());
        ASSERT_TRUE(placed.is_ok()) << placed.status().to_string();
        testing::expect_finite_outputs((*placed)->model);
    }
}

}  // namespace
}  // namespace xb::config
