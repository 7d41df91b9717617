// What perf mode divides its times by (opcheck/case_cost.hpp): a product's multiply-adds and the
// bytes it moves, and for the experts' products only the experts the pairs can choose.
#include <gtest/gtest.h>

#include <initializer_list>

#include "core/context.hpp"
#include "core/ops.hpp"
#include "opcheck/case_cost.hpp"

namespace xb::opcheck {
namespace {

Tensor* input(Context& ctx, DType t, std::initializer_list<int64_t> ne) { return ctx.new_tensor(t, ne); }

TEST(CaseCost, MatrixProductsCountTheirMultiplyAddsAndBytes) {
    Context ctx;
    Tensor* w = input(ctx, DType::F32, {64, 10, 1, 1});
    Tensor* decode = mul_mat(ctx, w, input(ctx, DType::F32, {64, 1, 1, 1}));
    Tensor* batch = mul_mat(ctx, w, input(ctx, DType::F32, {64, 9, 1, 1}));
    ASSERT_TRUE(ctx.ok()) << ctx.status().to_string();
    const CaseCost d = op_cost(*decode);
    EXPECT_DOUBLE_EQ(d.flops, 2.0 * 64 * 10);
    EXPECT_DOUBLE_EQ(d.bytes, 4.0 * (64 * 10 + 64 + 10));
    EXPECT_FALSE(d.compute_bound);
    EXPECT_TRUE(op_cost(*batch).compute_bound);
}

TEST(CaseCost, ExpertProductsReadOnlyTheExpertsThePairsCanChoose) {
    Context ctx;
    // 16 experts of 64 x 10 (q8_0: 34 bytes per 32 values), 2 per token.
    Tensor* as = input(ctx, DType::Q8_0, {64, 10, 16, 1});
    const double expert_bytes = 10 * 2 * 34;
    auto experts_of = [&](int64_t tokens) {
        Tensor* b = input(ctx, DType::F32, {64, 2, tokens, 1});
        return mul_mat_id(ctx, as, b, input(ctx, DType::I32, {2, tokens, 1, 1}));
    };
    Tensor* one = experts_of(1);
    Tensor* many = experts_of(12);
    ASSERT_TRUE(ctx.ok()) << ctx.status().to_string();
    const CaseCost d = op_cost(*one);
    EXPECT_DOUBLE_EQ(d.flops, 2.0 * 64 * 10 * 2);
    // Two experts, the two columns, the two ids, the 2 x 10 outputs.
    EXPECT_DOUBLE_EQ(d.bytes, 2 * expert_bytes + 4.0 * 2 * 64 + 4.0 * 2 + 4.0 * 2 * 10);
    EXPECT_FALSE(d.compute_bound);
    // 24 pairs can read all 16 experts, no more.
    const CaseCost m = op_cost(*many);
    EXPECT_DOUBLE_EQ(m.flops, 2.0 * 64 * 10 * 2 * 12);
    EXPECT_DOUBLE_EQ(m.bytes, 16 * expert_bytes + 4.0 * 24 * 64 + 4.0 * 24 + 4.0 * 24 * 10);
    EXPECT_TRUE(m.compute_bound);
}

}  // namespace
}  // namespace xb::opcheck
