// GGUF v3: every metadata type read, write-then-read round trips bit for bit (quantized types too),
// alignment, corrupt files rejected with offsets, and a config's weights (float or quantized)
// exported with save_weights and loaded back.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "formats/gguf.hpp"
#include "config/model_io.hpp"
#include "test_config_util.hpp"

namespace xb {
namespace {

using config::testing::data_path;

std::string temp_file(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("xb-gguf-" + std::to_string(::getpid()) + "-" + name)).string();
}

std::vector<std::byte> pattern(size_t n, uint32_t seed) {
    std::vector<std::byte> out(n);
    for (std::byte& b : out) {
        seed = seed * 1664525u + 1013904223u;
        b = static_cast<std::byte>(seed >> 24);
    }
    return out;
}

TEST(Gguf, ReadsEveryMetadataType) {
    auto r = GgufReader::open(data_path("small.gguf"));
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(r->version(), 3u);
    EXPECT_EQ(r->alignment(), 32u);
    EXPECT_EQ(r->data_offset() % 32, 0u);
    EXPECT_EQ(*r->find_kv("general.architecture")->as_string(), "xbackend-test");
    EXPECT_EQ(r->find_kv("test.u8")->as_int(), 200);
    EXPECT_EQ(r->find_kv("test.i8")->as_int(), -100);
    EXPECT_EQ(r->find_kv("test.u16")->as_int(), 60000);
    EXPECT_EQ(r->find_kv("test.i16")->as_int(), -30000);
    EXPECT_EQ(r->find_kv("test.u32")->as_int(), 4000000000);
    EXPECT_EQ(r->find_kv("test.i32")->as_int(), -2000000000);
    EXPECT_EQ(r->find_kv("test.f32")->as_float(), 1.5);
    EXPECT_EQ(std::get<bool>(r->find_kv("test.bool")->data), true);
    EXPECT_EQ(std::get<uint64_t>(r->find_kv("test.u64")->data), (uint64_t{1} << 63) + 5);
    EXPECT_EQ(r->find_kv("test.i64")->as_int(), -(int64_t{1} << 62));
    EXPECT_EQ(r->find_kv("test.f64")->as_float(), -0.25);
    const auto* arr = r->find_kv("test.array")->as_array();
    ASSERT_NE(arr, nullptr);
    ASSERT_EQ(arr->size(), 2u);
    EXPECT_EQ(*(*arr)[1].as_string(), "bc");
    const auto* nested = r->find_kv("test.nested")->as_array();
    ASSERT_EQ(nested->size(), 1u);
    EXPECT_EQ((*(*nested)[0].as_array())[1].as_int(), -7);
    EXPECT_EQ(r->find_kv("no.such.key"), nullptr);

    ASSERT_EQ(r->tensors().size(), 3u);
    const GgufTensorInfo* w = r->find_tensor("w");
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->ne, (std::array<int64_t, 4>{4, 3, 1, 1}));
    EXPECT_EQ(w->nbytes, 48u);
    auto wd = r->read_tensor("w", DType::F32, {4, 3, 1, 1});
    ASSERT_TRUE(wd.is_ok()) << wd.status().to_string();
    float wv[12];
    std::memcpy(wv, wd->data(), 48);
    EXPECT_EQ(wv[5], 1.25f);
    const GgufTensorInfo* q = r->find_tensor("q");
    EXPECT_EQ(ggml_type_info(q->type)->name, std::string("q4_0"));
    EXPECT_EQ(q->nbytes, 36u);  // two blocks of 32 4-bit values and a scale
    EXPECT_EQ(r->read_tensor("q", DType::F32, {32, 2, 1, 1}).status().code(), StatusCode::InvalidArgument);
    EXPECT_EQ(r->read_tensor("q", DType::Q4_0, {32, 2, 1, 1}).value().size(), 36u);
}

TEST(Gguf, WriteThenReadIsBitIdentical) {
    GgufWriter w;
    w.set_kv("general.name", GgufValue::string("round trip"));
    w.set_kv("t.u32", GgufValue::u32(7));
    w.set_kv("t.i64", GgufValue::i64(-5));
    w.set_kv("t.f32", GgufValue::f32(0.5f));
    w.set_kv("t.f64", GgufValue::f64(1e300));
    w.set_kv("t.bool", GgufValue::boolean(false));
    w.set_kv("t.u64", GgufValue::u64(~uint64_t{0}));
    w.set_kv("t.i32", GgufValue::i32(-9));
    w.set_kv("t.strings", GgufValue::array(GgufValueType::String, {GgufValue::string("x"), GgufValue::string("")}));
    w.set_kv("t.u32", GgufValue::u32(8));  // replaces
    const std::vector<std::pair<DType, std::array<int64_t, 4>>> tensors = {
        {DType::F32, {5, 3, 1, 1}},  {DType::F16, {7, 1, 1, 1}},    {DType::BF16, {2, 2, 2, 2}},
        {DType::I32, {3, 1, 1, 1}},  {DType::Q4_0, {64, 3, 1, 1}},  {DType::Q5_1, {32, 1, 2, 1}},
        {DType::Q8_0, {96, 1, 1, 1}}, {DType::Q4_K, {256, 2, 1, 1}}, {DType::Q6_K, {512, 1, 1, 1}}};
    std::vector<std::vector<std::byte>> data;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const auto& [type, ne] = tensors[i];
        data.push_back(pattern(row_size(type, ne[0]) * static_cast<size_t>(ne[1] * ne[2] * ne[3]), static_cast<uint32_t>(i)));
        ASSERT_TRUE(w.add_tensor("t" + std::to_string(i), type, ne, data.back()).is_ok());
    }
    EXPECT_FALSE(w.add_tensor("t0", DType::F32, {1, 1, 1, 1}, std::vector<std::byte>(4)).is_ok());  // twice
    EXPECT_FALSE(w.add_tensor("part", DType::Q4_0, {40, 1, 1, 1}, std::vector<std::byte>(18)).is_ok());  // not whole blocks
    ASSERT_TRUE(w.set_alignment(64).is_ok());
    EXPECT_FALSE(w.set_alignment(48).is_ok());
    const std::string path = temp_file("rt.gguf");
    ASSERT_TRUE(w.write(path).is_ok());

    auto r = GgufReader::open(path);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(r->alignment(), 64u);
    EXPECT_EQ(r->find_kv("general.alignment")->as_int(), 64);
    EXPECT_EQ(r->find_kv("t.u32")->as_int(), 8);
    EXPECT_EQ(r->find_kv("t.i64")->as_int(), -5);
    EXPECT_EQ(r->find_kv("t.f32")->as_float(), 0.5);
    EXPECT_EQ(r->find_kv("t.f64")->as_float(), 1e300);
    EXPECT_EQ(std::get<uint64_t>(r->find_kv("t.u64")->data), ~uint64_t{0});
    EXPECT_EQ(r->find_kv("t.i32")->as_int(), -9);
    EXPECT_EQ(r->find_kv("t.strings")->as_array()->size(), 2u);
    for (size_t i = 0; i < tensors.size(); ++i) {
        const GgufTensorInfo* info = r->find_tensor("t" + std::to_string(i));
        ASSERT_NE(info, nullptr);
        EXPECT_EQ(info->offset % 64, 0u);
        auto d = r->read_tensor(info->name, tensors[i].first, tensors[i].second);
        ASSERT_TRUE(d.is_ok()) << d.status().to_string();
        EXPECT_EQ(*d, data[i]) << info->name;
    }
    EXPECT_EQ(r->find_tensor("t2")->n_dims, 4);
    EXPECT_EQ(r->find_tensor("t1")->n_dims, 1);
    // Every truncation of the file before the end of the last tensor's data is an error, never a
    // crash (only the final padding may go).
    uint64_t data_end = 0;
    for (const GgufTensorInfo& t : r->tensors()) data_end = std::max(data_end, r->data_offset() + t.offset + t.nbytes);
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_GT(raw.size(), data_end);
    const std::string cut = temp_file("cut.gguf");
    for (size_t n = 0; n < data_end; n += 7) {
        std::ofstream(cut, std::ios::binary | std::ios::trunc).write(raw.data(), static_cast<std::streamsize>(n));
        auto bad = GgufReader::open(cut);
        EXPECT_FALSE(bad.is_ok()) << "accepted a file cut at " << n;
        if (!bad.is_ok()) {
            EXPECT_NE(bad.status().message().find(": offset "), std::string::npos) << bad.status().message();
        }
    }
    std::filesystem::remove(cut);
    std::filesystem::remove(path);
}

TEST(Gguf, MismatchesNameTheTensorAndFile) {
    auto r = GgufReader::open(data_path("small.gguf")).value();
    const Status shape = r.read_tensor("w", DType::F32, {3, 4, 1, 1}).status();
    EXPECT_NE(shape.message().find("tensor 'w' has shape [4, 3], the config wants [3, 4]"), std::string::npos) << shape.message();
    const Status type = r.read_tensor("b", DType::F32, {3, 1, 1, 1}).status();
    EXPECT_NE(type.message().find("tensor 'b' is f16, the config wants f32"), std::string::npos) << type.message();
    const Status missing = r.read_tensor("x", DType::F32, {3, 1, 1, 1}).status();
    EXPECT_EQ(missing.code(), StatusCode::NotFound);
}

// --save-weights: a config's random weights exported and used again by another config, for a float
// and two quantized weight types (their blocks are saved as they are).
class SavedWeights : public ::testing::TestWithParam<const char*> {};

TEST_P(SavedWeights, LoadBackIdentically) {
    const std::string type = GetParam();
    const std::string path = temp_file("weights-" + type + ".gguf");
    const std::string decoder = R"({
        "seed": 3,
        "graph": { "model": "llama_decoder",
                   "params": { "n_layers": 2, "n_embd": 32, "n_head": 4, "n_ff": 64, "n_tokens": 3, "n_vocab": 40, "weight_type": ")" +
                                type + R"(" } }
    })";
    auto spec = config::parse_config(decoder, "decoder.json");
    ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
    auto first = config::testing::compute_alone(config::build_model(*spec, global_registry()).value());
    ASSERT_TRUE(first.is_ok()) << first.status().to_string();
    ASSERT_TRUE(config::save_weights((*first)->model, path).is_ok());

    // The same decoder, other seed, every weight from the file: the same weights and logits.
    std::string reload = decoder;
    reload.replace(reload.find("\"seed\": 3"), 9, "\"seed\": 99, \"defaults\": {\"init\": {\"kind\": \"gguf\", \"file\": \"" + path + "\"}}");
    auto spec2 = config::parse_config(reload, "reload.json");
    ASSERT_TRUE(spec2.is_ok()) << spec2.status().to_string();
    auto second = config::testing::compute_alone(config::build_model(*spec2, global_registry()).value());
    ASSERT_TRUE(second.is_ok()) << second.status().to_string();
    const config::Model& a = (*first)->model;
    const config::Model& b = (*second)->model;
    ASSERT_EQ(a.weights.size(), b.weights.size());
    for (size_t i = 0; i < a.weights.size(); ++i) {
        std::vector<std::byte> x(a.weights[i]->nbytes()), y(b.weights[i]->nbytes());
        ASSERT_TRUE(tensor_get(*a.weights[i], x.data(), 0, x.size()).is_ok());
        ASSERT_TRUE(tensor_get(*b.weights[i], y.data(), 0, y.size()).is_ok());
        EXPECT_EQ(x, y) << a.weights[i]->name;
    }
    // Inputs are not weights: they still come from the seed, so give both runs the same tokens.
    EXPECT_NE(tensor_get_f32(*a.find("tokens")).value(), tensor_get_f32(*b.find("tokens")).value());

    auto file = GgufReader::open(path).value();
    EXPECT_EQ(*file.find_kv("general.architecture")->as_string(), "xbackend");
    EXPECT_EQ(file.find_kv("xbackend.seed")->as_int(), 3);
    EXPECT_EQ(file.tensors().size(), a.weights.size());
    EXPECT_EQ(ggml_type_info(file.find_tensor("blk.0.attn_q.weight")->type)->name, type);
    EXPECT_EQ(ggml_type_info(file.find_tensor("blk.0.attn_norm.weight")->type)->name, std::string("f32"));  // norms stay f32
    std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Types, SavedWeights, ::testing::Values("f16", "q8_0", "q4_1"));

TEST(Gguf, SaveWeightsNeedsAPlacedModel) {
    auto spec = config::parse_config(R"({"tensors": {"w": {"shape": [2]}}, "graph": [{"name": "y", "op": "sqr", "args": ["w"]}]})", "x.json");
    auto model = config::build_model(*spec, global_registry()).value();
    EXPECT_FALSE(config::save_weights(model, temp_file("unplaced.gguf")).is_ok());
}

}  // namespace
}  // namespace xb
