// .npy reading and writing: bit-identical round trips of every type, numpy's header versions,
// shapes in numpy's order, and errors with the file and offset.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "alloc/context_alloc.hpp"
#include "backend/registry.hpp"
#include "builtin/builtin_backends.hpp"
#include "backend/tensor_io.hpp"
#include "config/model_io.hpp"
#include "formats/npy.hpp"
#include "core/ops.hpp"
#include "test_config_util.hpp"

namespace xb {
namespace {

using config::testing::data_path;

std::string temp_file(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("xb-npy-" + std::to_string(::getpid()) + "-" + name)).string();
}

NpyArray make_array(DType type, std::vector<int64_t> shape, uint32_t seed) {
    NpyArray a;
    a.type = type;
    a.shape = std::move(shape);
    a.data.resize(static_cast<size_t>(a.nelements()) * type_size(type));
    // Arbitrary bit patterns (every f16 bit pattern included, NaN payloads too): bytes must survive.
    uint32_t x = seed;
    for (std::byte& b : a.data) {
        x = x * 1664525u + 1013904223u;
        b = static_cast<std::byte>(x >> 24);
    }
    return a;
}

TEST(Npy, RoundTripsEveryTypeBitForBit) {
    for (DType t : {DType::F32, DType::F16, DType::I32, DType::I64}) {
        for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{}, {7}, {3, 5}, {2, 3, 4}, {1, 2, 3, 2}, {0, 3}}) {
            const NpyArray a = make_array(t, shape, 17);
            const std::string path = temp_file(std::string(dtype_name(t)) + ".npy");
            ASSERT_TRUE(write_npy(path, a).is_ok());
            auto b = read_npy(path);
            ASSERT_TRUE(b.is_ok()) << b.status().to_string();
            EXPECT_EQ(b->type, t);
            EXPECT_EQ(b->shape, a.shape);
            EXPECT_EQ(b->data, a.data) << dtype_name(t);
            std::filesystem::remove(path);
        }
    }
}

TEST(Npy, HeaderIsNumpysFormat) {
    const NpyArray a = make_array(DType::F16, {2, 3}, 1);
    const std::vector<std::byte> bytes = encode_npy(a).value();
    ASSERT_GE(bytes.size(), 10u);
    EXPECT_EQ(std::memcmp(bytes.data(), "\x93NUMPY\x01\x00", 8), 0);
    const size_t header_len = std::to_integer<size_t>(bytes[8]) | std::to_integer<size_t>(bytes[9]) << 8;
    EXPECT_EQ((10 + header_len) % 64, 0u);  // the data starts 64-aligned
    const std::string header(reinterpret_cast<const char*>(bytes.data() + 10), header_len);
    EXPECT_EQ(header.rfind("{'descr': '<f2', 'fortran_order': False, 'shape': (2, 3), }", 0), 0u) << header;
    EXPECT_EQ(header.back(), '\n');
    EXPECT_EQ(bytes.size(), 10 + header_len + 12);
}

TEST(Npy, ReadsFilesWrittenByNumpyConventions) {
    auto f32 = read_npy(data_path("good_2x3_f32.npy"));
    ASSERT_TRUE(f32.is_ok()) << f32.status().to_string();
    EXPECT_EQ(f32->shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(f32->ne().value(), (std::array<int64_t, 4>{3, 2, 1, 1}));  // numpy (2, 3) is ne [3, 2]
    std::vector<float> v(6);
    std::memcpy(v.data(), f32->data.data(), 24);
    EXPECT_EQ(v, (std::vector<float>{0, 1, 2, 3, 4, 5}));
    auto v2 = read_npy(data_path("good_v2_f32.npy"));
    ASSERT_TRUE(v2.is_ok()) << v2.status().to_string();
    EXPECT_EQ(v2->data, f32->data);
    auto f64 = read_npy(data_path("good_2x3_f64.npy"));  // numpy's default float: read as f32
    ASSERT_TRUE(f64.is_ok()) << f64.status().to_string();
    EXPECT_EQ(f64->type, DType::F32);
    EXPECT_EQ(f64->data, f32->data);
    auto f16 = read_npy(data_path("good_3_f16.npy"));
    ASSERT_TRUE(f16.is_ok()) << f16.status().to_string();
    EXPECT_EQ(f16->type, DType::F16);
    uint16_t h[3];
    std::memcpy(h, f16->data.data(), 6);
    EXPECT_EQ(f16_to_f32(h[0]), 0.5f);
    EXPECT_EQ(f16_to_f32(h[1]), -1.0f);
    EXPECT_EQ(f16_to_f32(h[2]), 2.0f);
    auto i32 = read_npy(data_path("good_4_i32.npy"));
    ASSERT_TRUE(i32.is_ok()) << i32.status().to_string();
    int32_t iv[4];
    std::memcpy(iv, i32->data.data(), 16);
    EXPECT_EQ(iv[2], 4);
}

TEST(Npy, BadFilesNameTheOffset) {
    const auto error = [](const char* file) { return read_npy(data_path(file)).status().message(); };
    EXPECT_NE(error("truncated.npy").find("truncated.npy: offset 128: truncated data"), std::string::npos);
    EXPECT_NE(error("corrupt_magic.npy").find("offset 0: not a .npy file"), std::string::npos);
    EXPECT_NE(error("fortran.npy").find("offset 10: Fortran-order"), std::string::npos);
    EXPECT_NE(error("big_endian.npy").find("unsupported dtype '>f4'"), std::string::npos);
    EXPECT_EQ(read_npy(data_path("nothing.npy")).status().code(), StatusCode::NotFound);
    // Cut anywhere, a file is an error, never a crash.
    std::ifstream in(data_path("good_2x3_f32.npy"), std::ios::binary);
    const std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (size_t n = 0; n < raw.size(); ++n) {
        EXPECT_FALSE(decode_npy(std::as_bytes(std::span<const char>(raw.data(), n)), "cut").is_ok()) << n;
    }
    std::vector<char> extra = raw;
    extra.push_back(0);
    EXPECT_NE(decode_npy(std::as_bytes(std::span<const char>(extra)), "long").status().message().find("corrupt data"), std::string::npos);
}

TEST(Npy, EncodingChecksTheArray) {
    NpyArray a = make_array(DType::BF16, {2}, 1);
    EXPECT_EQ(encode_npy(a).status().code(), StatusCode::NotSupported);  // numpy has no bf16
    a = make_array(DType::F32, {2, 2}, 1);
    a.data.pop_back();
    EXPECT_FALSE(encode_npy(a).is_ok());
    a = make_array(DType::F32, {1, 1, 1, 1, 2}, 1);
    EXPECT_FALSE(a.ne().is_ok());
}

TEST(Npy, SavesTensorsFromAnyBackend) {
    Context ctx;
    Tensor* h = ctx.new_tensor(DType::F16, {3, 2});
    Tensor* b = ctx.new_tensor(DType::BF16, {4});
    Tensor* t = transpose(ctx, ctx.new_tensor(DType::F32, {2, 3}));  // not contiguous
    Device* sim = global_registry().dev_by_name("SIM0");
    BufferType& buft = sim ? sim->buffer_type() : global_registry().dev_by_name("CPU")->buffer_type();
    std::vector<Tensor*> all = {h, b, t->view_src};
    auto buffer = alloc_tensors(all, buft).value();
    ASSERT_TRUE(view_init(*t).is_ok());
    ASSERT_TRUE(tensor_set_f32(*h, std::vector<float>{1, 2, 3, 4, 5, 6}).is_ok());
    ASSERT_TRUE(tensor_set_f32(*b, std::vector<float>{1.5f, -2, 0, 8}).is_ok());
    ASSERT_TRUE(tensor_set_f32(*t->view_src, std::vector<float>{1, 2, 3, 4, 5, 6}).is_ok());

    auto hn = npy_from_tensor(*h).value();
    EXPECT_EQ(hn.type, DType::F16);
    EXPECT_EQ(hn.shape, (std::vector<int64_t>{2, 3}));
    auto bn = npy_from_tensor(*b).value();
    EXPECT_EQ(bn.type, DType::F32);
    EXPECT_EQ(bn.data.size(), 16u);
    auto tn = npy_from_tensor(*t).value();
    EXPECT_EQ(tn.shape, (std::vector<int64_t>{2, 3}));
    std::vector<float> tv(6);
    std::memcpy(tv.data(), tn.data.data(), 24);
    EXPECT_EQ(tv, (std::vector<float>{1, 3, 5, 2, 4, 6}));  // the transpose's logical order
    const std::string path = temp_file("h.npy");
    ASSERT_TRUE(save_npy(*h, path).is_ok());
    EXPECT_EQ(read_npy(path).value().data, hn.data);
    std::filesystem::remove(path);
}

}  // namespace
}  // namespace xb
