// Hostile inputs: every size a user can set (shape dims, view strides and offsets, reshape shapes,
// builder params, expressions, GGUF dims and counts) at its boundary values gives a status (one
// line) or a working model, never a crash, a wrapped size or minutes of work.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "alloc/context_alloc.hpp"
#include "backend/tensor_io.hpp"
#include "formats/gguf.hpp"
#include "core/size_math.hpp"
#include "local_registry.hpp"
#include "test_config_util.hpp"

namespace xb::config {
namespace {

// The values at which size arithmetic goes wrong: zero, negative, 2^31, 2^32, 2^53, 2^63, 2^64 - 1.
const std::vector<std::string> kBoundaries = {"0",          "-1",         "2147483648",           "4294967296",
                                              "9007199254740992", "9223372036854775808", "18446744073709551615"};

// Loads, builds, places and computes `text` on a simulated device of 1 GiB (the CPU's kernels),
// so that whether a size fits does not depend on the machine: on a host with 128 GiB, 2^31 floats
// fit in the CPU's memory and take most of a minute to fill. The first error.
Status run_config(const std::string& text) {
    xbt::LocalRegistry local;
    local.configure("SIM0", "memory=1G");
    XB_ASSIGN_OR_RETURN(ConfigSpec spec, parse_config(text, "hostile.json"));
    BuildOptions options;
    options.backends = {"SIM0"};
    XB_ASSIGN_OR_RETURN(Model model, build_model(spec, local.registry(), options));
    XB_ASSIGN_OR_RETURN(auto placed, testing::compute_alone(std::move(model), local.registry()));
    return Status::ok();
}

struct Outcome {
    Status status;
    double seconds;
};

Outcome timed_run(const std::string& text) {
    const auto start = std::chrono::steady_clock::now();
    Status s = run_config(text);
    return {std::move(s), std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

// A config with `value` substituted for every "$".
std::string with_value(std::string text, const std::string& value) {
    for (size_t at = text.find('$'); at != std::string::npos; at = text.find('$', at + value.size())) text.replace(at, 1, value);
    return text;
}

// Every boundary value in every field: an error on one line, or a model that computes, within a second.
struct Field {
    const char* name;
    const char* config;  // "$" is the value
    bool zero_ok;        // 0 is a valid value of the field
};

const std::vector<Field> kFields = {
    {"input_dim0", R"({"tensors": {"x": {"shape": [$, 2], "role": "input"}}, "graph": [{"name": "y", "op": "sqr", "args": ["x"]}]})", false},
    {"input_both_dims", R"({"tensors": {"x": {"shape": [$, $], "role": "input"}}, "graph": [{"name": "y", "op": "sqr", "args": ["x"]}]})", false},
    {"weight_dim3", R"({"tensors": {"w": {"shape": [4, 1, 1, $]}}, "graph": [{"name": "y", "op": "sqr", "args": ["w"]}]})", false},
    {"view_shape", R"({"tensors": {"x": {"shape": [4]}}, "graph": [{"name": "y", "op": "view", "args": ["x"], "params": {"shape": [$]}}]})", true},
    {"view_stride", R"({"tensors": {"x": {"shape": [4]}}, "graph": [{"name": "y", "op": "view", "args": ["x"], "params": {"shape": [1, 2], "strides": [$, $, $]}}]})", true},
    {"view_offset", R"({"tensors": {"x": {"shape": [4]}}, "graph": [{"name": "y", "op": "view", "args": ["x"], "params": {"shape": [2], "offset": $}}]})", true},
    {"reshape", R"({"tensors": {"x": {"shape": [4]}}, "graph": [{"name": "y", "op": "reshape", "args": ["x"], "params": {"shape": [$, $, $, $]}}]})", false},
    {"mlp_layers", R"({"graph": {"model": "mlp", "params": {"n_layers": $, "n_embd": 8, "n_hidden": 8, "n_batch": 2}}})", false},
    {"mlp_embd", R"({"graph": {"model": "mlp", "params": {"n_layers": 1, "n_embd": $, "n_hidden": 8, "n_batch": 2}}})", false},
    {"llama_vocab", R"({"graph": {"model": "llama_decoder", "params": {"n_layers": 1, "n_embd": 8, "n_head": 2, "n_ff": 8, "n_tokens": 2, "n_vocab": $}}})", false},
    {"llama_kv", R"({"graph": {"model": "llama_decoder", "params": {"n_layers": 1, "n_embd": 8, "n_head": 2, "n_ff": 8, "n_tokens": 2, "n_vocab": 8, "n_kv": $}}})", true},
    {"llama_layers", R"({"graph": {"model": "llama_decoder", "params": {"n_layers": $, "n_embd": 8, "n_head": 2, "n_ff": 8, "n_tokens": 2, "n_vocab": 8}}})", false},
    {"param_expression", R"({"params": {"n": $}, "tensors": {"x": {"shape": ["n * 2", 2], "role": "input"}}, "graph": [{"name": "y", "op": "sqr", "args": ["x"]}]})", false},
};

class BoundaryValue : public ::testing::TestWithParam<std::tuple<Field, std::string>> {};

TEST_P(BoundaryValue, IsAnErrorOrWorks) {
    const auto& [field, value] = GetParam();
    const Outcome o = timed_run(with_value(field.config, value));
    EXPECT_LT(o.seconds, 1.0) << field.name << " = " << value << " took " << o.seconds << " s";
    if (o.status.is_ok()) {
        // Only small values may work: the others are beyond any device or any sane model.
        EXPECT_TRUE(value == "0" && field.zero_ok) << field.name << " = " << value << " was accepted";
        return;
    }
    const std::string& m = o.status.message();
    EXPECT_FALSE(m.empty());
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

INSTANTIATE_TEST_SUITE_P(Fields, BoundaryValue, ::testing::Combine(::testing::ValuesIn(kFields), ::testing::ValuesIn(kBoundaries)),
                         [](const ::testing::TestParamInfo<BoundaryValue::ParamType>& info) {
                             const std::string& v = std::get<1>(info.param);
                             return std::string(std::get<0>(info.param).name) + "_" + (v == "-1" ? "minus1" : v);
                         });

void PrintTo(const Field& f, std::ostream* os) { *os << f.name; }

TEST(HostileInputs, OverflowingShapeNamesItsSize) {
    const Outcome o = timed_run(with_value(kFields[1].config, "2147483648"));
    ASSERT_FALSE(o.status.is_ok());
    EXPECT_NE(o.status.message().find("needs 16.0 EiB"), std::string::npos) << o.status.message();
}

TEST(HostileInputs, ModelLargerThanTheDeviceIsRefusedBeforeAllocating) {
    // 2^40 floats: fits the size arithmetic, not the machine.
    const Outcome o = timed_run(R"({"tensors": {"w": {"shape": [1048576, 1048576]}}, "graph": [{"name": "y", "op": "sqr", "args": ["w"]}]})");
    ASSERT_FALSE(o.status.is_ok());
    EXPECT_EQ(o.status.code(), StatusCode::OutOfMemory) << o.status.to_string();
    EXPECT_NE(o.status.message().find("need 4.0 TiB, SIM0 has 1.0 GiB free"), std::string::npos) << o.status.message();
}

TEST(HostileInputs, InputsLargerThanTheDeviceAreRefusedBeforeTheirValuesAreMade) {
    // 2^29 floats: 2 GiB of values, which the host would make (a second or more) before SIM0 refused them.
    const Outcome o = timed_run(with_value(kFields[0].config, "268435456"));
    ASSERT_FALSE(o.status.is_ok());
    EXPECT_EQ(o.status.code(), StatusCode::OutOfMemory) << o.status.to_string();
    EXPECT_LT(o.seconds, 1.0);
    EXPECT_NE(o.status.message().find("the inputs need 2.0 GiB, SIM0 has 1.0 GiB free"), std::string::npos)
        << o.status.message();
}

TEST(HostileInputs, InputsBeyondTheHostAreRefusedOnTheCpuToo) {
    // On the CPU the values and the tensors are both host memory: 2^40 floats need 8 TiB of it.
    auto spec = parse_config(with_value(kFields[0].config, "549755813888"), "hostile.json");
    ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
    auto model = build_model(*spec, global_registry());
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    const auto start = std::chrono::steady_clock::now();
    auto placed = testing::compute_alone(std::move(model).value());
    ASSERT_FALSE(placed.is_ok());
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
    EXPECT_EQ(placed.status().code(), StatusCode::OutOfMemory) << placed.status().to_string();
    EXPECT_NE(placed.status().message().find("the inputs (their values, then their tensors) need 8.0 TiB, CPU has"),
              std::string::npos)
        << placed.status().message();
}

TEST(HostileInputs, DeepOrLongExpressionsAreErrors) {
    const std::string deep_minus = std::string(20000, '-') + "1";
    const std::string deep_parens = std::string(20000, '(') + "1" + std::string(20000, ')');
    for (const std::string& e : {deep_minus, deep_parens}) {
        const Outcome o = timed_run(R"({"params": {"n": ")" + e + R"("}, "tensors": {"x": {"shape": [2], "role": "input"}}, "graph": [{"name": "y", "op": "sqr", "args": ["x"]}]})");
        ASSERT_FALSE(o.status.is_ok());
        EXPECT_LT(o.seconds, 1.0);
        EXPECT_LT(o.status.message().size(), 400u) << "the message repeats the whole expression";
    }
    const std::string nested = std::string(64, '(') + "1" + std::string(64, ')');
    EXPECT_TRUE(eval_expr(std::string(63, '(') + "1" + std::string(63, ')'), {}).is_ok());
    EXPECT_NE(eval_expr(nested, {}).status().message().find("nested more than 64 levels"), std::string::npos);
}

TEST(HostileInputs, SuggestionsForLongNamesAreCheap) {
    const std::string name(20000, 'x');
    const auto start = std::chrono::steady_clock::now();
    const Outcome o = timed_run(R"({"tensors": {"x": {"shape": [2], "role": "input"}}, "graph": [{"name": "y", "op": "sqr", "args": [")" + name + R"("]}]})");
    ASSERT_FALSE(o.status.is_ok());
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 0.5);
    EXPECT_EQ(o.status.message().find("did you mean"), std::string::npos);
}

// --- GGUF -------------------------------------------------------------------------------------------

std::string temp_path(const char* name) { return (std::filesystem::temp_directory_path() / name).string(); }

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
}

// Little-endian GGUF pieces.
void put_u32(std::vector<uint8_t>& b, uint32_t v) {
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_u64(std::vector<uint8_t>& b, uint64_t v) {
    for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_string(std::vector<uint8_t>& b, const std::string& s) {
    put_u64(b, s.size());
    b.insert(b.end(), s.begin(), s.end());
}
std::vector<uint8_t> header(uint64_t n_tensors, uint64_t n_kv) {
    std::vector<uint8_t> b = {'G', 'G', 'U', 'F'};
    put_u32(b, 3);
    put_u64(b, n_tensors);
    put_u64(b, n_kv);
    return b;
}

TEST(HostileGguf, TensorWhoseByteSizeWrapsIsCorrupt) {
    // One f32 tensor [2^31, 2^31]: 2^62 elements fit int64, their 2^64 bytes do not.
    std::vector<uint8_t> b = header(1, 0);
    put_string(b, "t");
    put_u32(b, 2);
    put_u64(b, uint64_t{1} << 31);
    put_u64(b, uint64_t{1} << 31);
    put_u32(b, 0);  // f32
    put_u64(b, 0);
    b.resize(128, 0);
    const std::string path = temp_path("xb_hostile_wrap.gguf");
    write_bytes(path, b);
    auto r = GgufReader::open(path);
    ASSERT_FALSE(r.is_ok()) << "a 16 EiB tensor in a 128-byte file was accepted";
    EXPECT_NE(r.status().message().find("impossible size"), std::string::npos) << r.status().message();
}

TEST(HostileGguf, LongArraysAreReadPastNotKept) {
    // A 4M-element u8 array: counted, skipped, no items (each would cost a 48-byte value).
    constexpr uint64_t kCount = uint64_t{4} << 20;
    std::vector<uint8_t> b = header(0, 1);
    put_string(b, "big");
    put_u32(b, static_cast<uint32_t>(GgufValueType::Array));
    put_u32(b, static_cast<uint32_t>(GgufValueType::U8));
    put_u64(b, kCount);
    b.resize(b.size() + kCount, 7);
    const std::string path = temp_path("xb_hostile_array.gguf");
    write_bytes(path, b);
    auto r = GgufReader::open(path);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    const GgufValue* v = r->find_kv("big");
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->array_length, kCount);
    ASSERT_NE(v->as_array(), nullptr);
    EXPECT_TRUE(v->as_array()->empty());
}

TEST(HostileGguf, CountsBeyondTheFileAreCorruptBeforeAllocating) {
    for (const uint64_t count : {uint64_t{1} << 31, uint64_t{1} << 53, UINT64_MAX}) {
        const std::string path = temp_path("xb_hostile_counts.gguf");
        write_bytes(path, header(count, 0));
        auto tensors = GgufReader::open(path);
        EXPECT_FALSE(tensors.is_ok()) << count << " tensors";
        write_bytes(path, header(0, count));
        auto kvs = GgufReader::open(path);
        EXPECT_FALSE(kvs.is_ok()) << count << " key-values";
    }
}

TEST(HostileGguf, WriterTakesAnEmptyTensor) {
    GgufWriter w;
    ASSERT_TRUE(w.add_tensor("empty", DType::F32, {0, 1, 1, 1}, std::vector<std::byte>{}).is_ok());
    const std::string path = temp_path("xb_hostile_empty.gguf");
    ASSERT_TRUE(w.write(path).is_ok());
    auto r = GgufReader::open(path);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(r->tensors().size(), 1u);
}

TEST(SizeMath, CheckedArithmeticCatchesOverflow) {
    EXPECT_FALSE(checked_mul(uint64_t{1} << 32, uint64_t{1} << 32));
    EXPECT_EQ(checked_mul(uint64_t{1} << 31, uint64_t{1} << 31), uint64_t{1} << 62);
    EXPECT_FALSE(checked_add(UINT64_MAX, 1));
    EXPECT_FALSE(checked_nelements({INT64_MAX, 2, 1, 1}));
    EXPECT_FALSE(checked_nelements({-1, 1, 1, 1}));
    EXPECT_FALSE(checked_nbytes(DType::F32, {int64_t{1} << 31, int64_t{1} << 31, 1, 1}));
    EXPECT_EQ(checked_nbytes(DType::Q4_0, {64, 3, 1, 1}), 2u * 18 * 3);
    EXPECT_EQ(checked_extent(DType::F32, {2, 3, 1, 1}, {4, 100, 400, 400}), 4u + 4 + 200);
    EXPECT_FALSE(checked_extent(DType::F32, {2, 3, 1, 1}, {4, SIZE_MAX / 2, 1, 1}));
    EXPECT_EQ(approximate_bytes_text(DType::F32, {int64_t{1} << 31, int64_t{1} << 31, 1, 1}), "16.0 EiB");
}

// --- float to integer conversions (round 2) ---------------------------------------------------------

TEST(SizeMath, FloatToIntegerIsCheckedEverywhere) {
    EXPECT_EQ(checked_integer<int64_t>(3.9), 3);
    EXPECT_EQ(checked_integer<int64_t>(-3.9), -3);
    EXPECT_FALSE(checked_integer<int64_t>(std::nan("")));
    EXPECT_FALSE(checked_integer<int64_t>(9223372036854775808.0));  // 2^63: one past the range
    EXPECT_EQ(checked_integer<int64_t>(-9223372036854775808.0), INT64_MIN);
    EXPECT_FALSE(checked_integer<int32_t>(2147483648.0));
    EXPECT_FALSE(checked_integer<uint32_t>(-1.0));
    EXPECT_EQ(clamped_integer<int32_t>(1e300), INT32_MAX);
    EXPECT_EQ(clamped_integer<int32_t>(-1e300), INT32_MIN);
    EXPECT_EQ(clamped_integer<int32_t>(std::nan("")), 0);
    EXPECT_EQ(share_of(100, 0.5), 50);
    EXPECT_EQ(share_of(100, std::nan("")), 0);
    EXPECT_EQ(share_of(100, 2.0), 100);
    EXPECT_EQ(share_of(INT64_MAX, 0.9999999999999999), INT64_MAX - 1023);  // rounds within the range
}

// Random i32 values near the type's limit: within range as doubles, but drawn in float, whose
// rounding (2147483600 -> 2^31) made the conversion to int32 undefined. They saturate now.
TEST(HostileInputs, RandomIntegersAtTheTypesLimitSaturate) {
    auto spec = parse_config(R"({"tensors": {"x": {"shape": [4], "type": "i32", "role": "input",
                                   "init": {"kind": "normal", "mean": 2147483600, "std": 1}},
                                               "t": {"shape": [2, 1]}},
                                 "graph": [{"name": "y", "op": "get_rows", "args": ["t", "x"]}]})",
                             "limit.json");
    ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
    auto model = build_model(*spec, global_registry());
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    // The values are made when the inputs are set; nothing needs computing.
    auto backend = global_registry().init_by_name("CPU");
    ASSERT_TRUE(backend.is_ok());
    Backend* placed[] = {backend->get()};
    ASSERT_TRUE(place_and_init(*model, placed).is_ok());
    auto tensors = alloc_ctx_tensors(*model->ctx, **backend);
    ASSERT_TRUE(tensors.is_ok());
    ASSERT_TRUE(model->set_inputs().is_ok());
    std::vector<int32_t> x(4);
    ASSERT_TRUE(tensor_get(*model->find("x"), x.data(), 0, 16).is_ok());
    for (const int32_t v : x) EXPECT_EQ(v, INT32_MAX);
}

// An arange whose element count overflowed a 64-bit integer was a float-to-integer cast out of range.
TEST(HostileInputs, AnArangeOfTooManyElementsIsAnError) {
    auto spec = parse_config(R"({"graph": [{"name": "y", "op": "arange", "params": {"start": 0, "stop": 3e38, "step": 1e-30}}]})",
                             "arange.json");
    ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
    auto model = build_model(*spec, global_registry());
    ASSERT_FALSE(model.is_ok());
    EXPECT_NE(model.status().message().find("more than"), std::string::npos) << model.status().message();
}

}  // namespace
}  // namespace xb::config
