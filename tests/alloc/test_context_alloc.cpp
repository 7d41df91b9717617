// Linear allocator and alloc_ctx_tensors.
#include <gtest/gtest.h>

#include "alloc/context_alloc.hpp"
#include "alloc/linear_allocator.hpp"
#include "backend/registry.hpp"
#include "builtin/builtin_backends.hpp"
#include "backend/tensor_io.hpp"
#include "core/ops.hpp"

namespace xb {
namespace {

// The CPU buffer type with a small maximum buffer size, to force several buffers.
class SmallMaxBufferType final : public BufferType {
public:
    SmallMaxBufferType(BufferType& base, size_t max) : base_(&base), max_(max) {}
    const char* name() const override { return "CPU_small"; }
    Result<std::unique_ptr<Buffer>> alloc_buffer(size_t size) override { return base_->alloc_buffer(size); }
    size_t alignment() const override { return base_->alignment(); }
    size_t max_size() const override { return max_; }
    bool is_host() const override { return true; }
    Device& device() const override { return base_->device(); }

private:
    BufferType* base_;
    size_t max_;
};

BufferType& cpu_buft() { return global_registry().dev_by_name("CPU")->buffer_type(); }

TEST(LinearAllocator, PlacesAlignedAndReportsFull) {
    auto buf = cpu_buft().alloc_buffer(256);
    ASSERT_TRUE(buf.is_ok());
    Context ctx;
    Tensor* a = ctx.new_tensor(DType::F32, {5});    // 20 bytes -> next at 64
    Tensor* b = ctx.new_tensor(DType::F32, {40});   // 160 bytes -> ends at 224
    Tensor* c = ctx.new_tensor(DType::F32, {16});   // 64 bytes: does not fit
    LinearAllocator alloc(**buf);
    ASSERT_TRUE(alloc.alloc(*a).is_ok());
    ASSERT_TRUE(alloc.alloc(*b).is_ok());
    EXPECT_EQ(static_cast<std::byte*>(b->data) - static_cast<std::byte*>(a->data), 64);
    Status full = alloc.alloc(*c);
    EXPECT_EQ(full.code(), StatusCode::OutOfMemory);
    EXPECT_NE(full.message().find("not enough space"), std::string::npos);
    EXPECT_EQ(c->data, nullptr);
}

TEST(ContextAlloc, AllocatesEveryTensorAndInitialisesViews) {
    Context ctx;
    Tensor* a = ctx.new_tensor(DType::F32, {10, 3});
    Tensor* row = view_1d(ctx, a, 10, a->nb[1]);
    Tensor* b = ctx.new_tensor(DType::F16, {7});
    auto buf = alloc_ctx_tensors(ctx, cpu_buft());
    ASSERT_TRUE(buf.is_ok()) << buf.status().to_string();
    EXPECT_EQ((*buf)->parts().size(), 1u) << "one buffer holds them all";
    for (Tensor* t : {a, row, b}) EXPECT_NE(t->data, nullptr);
    EXPECT_EQ(row->data, static_cast<std::byte*>(a->data) + a->nb[1]);
    // A second call has nothing left to allocate.
    auto again = alloc_ctx_tensors(ctx, cpu_buft());
    ASSERT_TRUE(again.is_ok());
    EXPECT_TRUE((*again)->empty());
}

TEST(ContextAlloc, SplitsAcrossBuffersAtMaxSize) {
    SmallMaxBufferType small(cpu_buft(), 1024);
    Context ctx;
    std::vector<Tensor*> ts;
    for (int i = 0; i < 10; ++i) ts.push_back(ctx.new_tensor(DType::F32, {100}));  // 400 bytes -> 448 aligned
    auto buf = alloc_ctx_tensors(ctx, small);
    ASSERT_TRUE(buf.is_ok()) << buf.status().to_string();
    const auto& parts = (*buf)->parts();
    EXPECT_EQ(parts.size(), 5u);  // two tensors per 1024-byte buffer
    for (const auto& p : parts) EXPECT_LE(p->size(), 1024u);
    // Every tensor works, and no two overlap.
    for (size_t i = 0; i < ts.size(); ++i) {
        std::vector<float> v(100, static_cast<float>(i));
        ASSERT_TRUE(tensor_set(*ts[i], v.data(), 0, 400).is_ok());
    }
    for (size_t i = 0; i < ts.size(); ++i) {
        auto got = tensor_get_f32(*ts[i]);
        ASSERT_TRUE(got.is_ok());
        for (float x : *got) ASSERT_EQ(x, static_cast<float>(i));
    }
    (*buf)->set_usage(BufferUsage::Weights);
    for (const auto& p : parts) EXPECT_EQ(p->usage(), BufferUsage::Weights);
}

TEST(ContextAlloc, TensorLargerThanMaxSizeIsAnError) {
    SmallMaxBufferType small(cpu_buft(), 256);
    Context ctx;
    ctx.new_tensor(DType::F32, {100});
    auto buf = alloc_ctx_tensors(ctx, small);
    ASSERT_FALSE(buf.is_ok());
    EXPECT_EQ(buf.status().code(), StatusCode::InvalidArgument);
}

TEST(ContextAlloc, ContextErrorIsReported) {
    Context ctx;
    add(ctx, ctx.new_tensor(DType::F32, {3}), ctx.new_tensor(DType::F32, {2}));
    auto buf = alloc_ctx_tensors(ctx, cpu_buft());
    EXPECT_FALSE(buf.is_ok());
}

}  // namespace
}  // namespace xb
