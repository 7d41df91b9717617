// ggml's devices (lib/ggml_devices): registered as foreign devices, never chosen by default; a graph
// computed by ggml's CPU backend gives the same values as xbackend's CPU where both compute exactly
// (adds, copies, layout); what ggml's builders would assert on is a status, not an abort. Every op
// case against the float64 reference and the backend contract are tests/opcheck's and
// tests/backend's: ggml:CPU joins both by being registered. In a build without ggml (XB_GGML=OFF, or
// scripts/ggml-setup not run) these tests say they were skipped.
#include <gtest/gtest.h>

#include <vector>

#include "alloc/context_alloc.hpp"
#include "backend/registry.hpp"
#include "backend/tensor_io.hpp"
#include "builtin/builtin_backends.hpp"
#include "core/ops.hpp"
#if defined(XB_HAVE_GGML)
#include "ggml_devices/ggml_device.hpp"
#endif

namespace xb {
namespace {

#if defined(XB_HAVE_GGML)
#define XB_REQUIRE_GGML()
#else
#define XB_REQUIRE_GGML() GTEST_SKIP() << "built without ggml's devices (scripts/ggml-setup, then XB_GGML=ON)"
#endif

TEST(GgmlDevices, RegisteredAsForeignDevicesNeverPickedByDefault) {
    XB_REQUIRE_GGML();
    Registry& reg = global_registry();
    Device* d = reg.dev_by_name("ggml:CPU");
    ASSERT_NE(d, nullptr) << reg.device_names();
    EXPECT_TRUE(d->is_foreign());
    EXPECT_EQ(d->type(), DeviceType::CPU);
    EXPECT_NE(d->description().find("ggml"), std::string::npos) << d->description();
    EXPECT_GT(d->memory().total, 0u);
    EXPECT_EQ(reg.dev_by_name("GGML:cpu"), d) << "names are case-insensitive, as every device's";
    EXPECT_STREQ(reg.dev_by_type(DeviceType::CPU)->name(), "CPU");
    auto best = reg.init_best();
    ASSERT_TRUE(best.is_ok()) << best.status().to_string();
    EXPECT_FALSE((*best)->device().is_foreign());
}

TEST(GgmlDevices, ComputesAGraphInItsOwnMemory) {
    XB_REQUIRE_GGML();
    auto backend = global_registry().init_by_name("ggml:CPU", "threads=2");
    ASSERT_TRUE(backend.is_ok()) << backend.status().to_string();
    Context ctx;
    Tensor* a = ctx.new_tensor(DType::F32, {5, 3});
    Tensor* b = ctx.new_tensor(DType::F32, {5, 1});
    // A broadcast add, then a transposed copy into a contiguous tensor: exact in f32 on any device.
    Tensor* sum = add(ctx, a, b);
    Tensor* out = cont(ctx, transpose(ctx, sum));
    auto graph = Graph::build({out});
    ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
    auto buffer = alloc_ctx_tensors(ctx, **backend);
    ASSERT_TRUE(buffer.is_ok()) << buffer.status().to_string();
    std::vector<float> va(15), vb(5);
    for (size_t i = 0; i < va.size(); ++i) va[i] = 0.25f * static_cast<float>(i) - 1.5f;
    for (size_t i = 0; i < vb.size(); ++i) vb[i] = 3.0f - static_cast<float>(i);
    ASSERT_TRUE(tensor_set_f32(*a, va).is_ok());
    ASSERT_TRUE(tensor_set_f32(*b, vb).is_ok());
    ASSERT_TRUE((*backend)->graph_compute(*graph).is_ok());
    auto got = tensor_get_f32(*out);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    ASSERT_EQ(got->size(), 15u);
    for (int row = 0; row < 3; ++row) {
        for (int col = 0; col < 5; ++col) {
            // out is [3, 5]: out[col][row] = a[row][col] + b[col]
            EXPECT_EQ((*got)[static_cast<size_t>(col * 3 + row)], va[static_cast<size_t>(row * 5 + col)] + vb[static_cast<size_t>(col)]);
        }
    }
}

TEST(GgmlDevices, WhatGgmlWouldAssertOnIsUnsupportedWithItsReason) {
    XB_REQUIRE_GGML();
    Device* d = global_registry().dev_by_name("ggml:CPU");
    ASSERT_NE(d, nullptr);
    Context ctx;
    Tensor* w = ctx.new_tensor(DType::F32, {4, 6});
    Tensor* x = ctx.new_tensor(DType::F32, {6, 2});
    // xbackend multiplies any strides; ggml_mul_mat asserts on a transposed src0.
    Tensor* y = mul_mat(ctx, transpose(ctx, w), x);
    auto graph = Graph::build({y});
    ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
    EXPECT_FALSE(d->supports_op(*y));
    const std::string why = static_cast<ggml_devices::GgmlDevice*>(d)->unsupported_reason(*y);
    EXPECT_NE(why.find("transposed"), std::string::npos) << why;
    // Computing it anyway is an error naming the node, not an abort inside ggml.
    auto backend = global_registry().init_by_name("ggml:CPU");
    ASSERT_TRUE(backend.is_ok());
    auto buffer = alloc_ctx_tensors(ctx, **backend);
    ASSERT_TRUE(buffer.is_ok()) << buffer.status().to_string();
    const Status s = (*backend)->graph_compute(*graph);
    EXPECT_EQ(s.code(), StatusCode::NotSupported) << s.to_string();
    EXPECT_NE(s.message().find("ggml:CPU"), std::string::npos) << s.to_string();
}

TEST(GgmlDevices, UnknownSettingsAreRefused) {
    XB_REQUIRE_GGML();
    auto backend = global_registry().init_by_name("ggml:CPU", "speed=11");
    ASSERT_FALSE(backend.is_ok());
    EXPECT_EQ(backend.status().code(), StatusCode::InvalidArgument);
    EXPECT_NE(backend.status().message().find("speed"), std::string::npos);
}

}  // namespace
}  // namespace xb
