// rewrite_values: every element of a host tensor, in logical order, whatever its type and strides.
#include <gtest/gtest.h>

#include <vector>

#include "core/context.hpp"
#include "core/ops.hpp"
#include "core/quant.hpp"
#include "core/tensor_values.hpp"

namespace xb {
namespace {

TEST(RewriteValues, VisitsAStridedViewInLogicalOrder) {
    Context ctx;
    Tensor* a = ctx.new_tensor(DType::F32, {4, 3});
    std::vector<float> storage = {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23};
    a->data = storage.data();
    Tensor* t = transpose(ctx, a);  // [3, 4]: element (i0, i1) is a's (i1, i0)
    t->data = storage.data();
    std::vector<float> seen;
    rewrite_values(*t, [&](int64_t n, float v) {
        EXPECT_EQ(n, static_cast<int64_t>(seen.size()));
        seen.push_back(v);
        return v + 100.0f;
    });
    EXPECT_EQ(seen, (std::vector<float>{0, 10, 20, 1, 11, 21, 2, 12, 22, 3, 13, 23}));
    EXPECT_EQ(storage[5], 111.0f);
}

TEST(RewriteValues, HalfQuantizedAndIntegerTypes) {
    Context ctx;
    Tensor* h = ctx.new_tensor(DType::F16, {4});
    std::vector<uint16_t> half(4, f32_to_f16(1.5f));
    h->data = half.data();
    rewrite_values(*h, [](int64_t n, float v) { return v * static_cast<float>(n); });
    EXPECT_EQ(f16_to_f32(half[3]), 4.5f);

    Tensor* q = ctx.new_tensor(DType::Q8_0, {64});
    std::vector<std::byte> blocks(q->nbytes());
    q->data = blocks.data();
    std::vector<float> ones(64, 1.0f), back(64);
    quantize_row(DType::Q8_0, ones.data(), q->data, 64);
    rewrite_values(*q, [](int64_t n, float v) { return n < 32 ? v : -v; });
    dequantize_row(DType::Q8_0, q->data, back.data(), 64);
    EXPECT_NEAR(back[0], 1.0f, 1e-2);
    EXPECT_NEAR(back[40], -1.0f, 1e-2);

    Tensor* ids = ctx.new_tensor(DType::I32, {3});
    std::vector<int32_t> values = {7, 8, 9};
    ids->data = values.data();
    rewrite_values(*ids, [](int64_t n, float v) { return n == 0 ? v + 1.0f : v; });
    EXPECT_EQ(values, (std::vector<int32_t>{8, 8, 9}));
}

}  // namespace
}  // namespace xb
