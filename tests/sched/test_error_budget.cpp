// The reference's own error (sched/error_budget.hpp): the per-node model, and what perturbing every
// node by it does downstream.
#include <gtest/gtest.h>

#include <cmath>

#include "alloc/context_alloc.hpp"
#include "backend/tensor_io.hpp"
#include "builtin/builtin_backends.hpp"
#include "core/ops.hpp"
#include "core/quant.hpp"
#include "sched/error_budget.hpp"
#include "test_values.hpp"

namespace xb {
namespace {

TEST(OwnError, TheModelPerOp) {
    Context ctx;
    const double u32 = std::ldexp(1.0, -24), u16 = std::ldexp(1.0, -11);
    Tensor* x = ctx.new_tensor(DType::F32, {64, 4});
    Tensor* wf = ctx.new_tensor(DType::F32, {64, 16});
    Tensor* wh = ctx.new_tensor(DType::F16, {64, 16});
    Tensor* wq = ctx.new_tensor(DType::Q4_0, {64, 16});
    EXPECT_DOUBLE_EQ(own_error(*add(ctx, x, x)), u32 * u32 / 3);
    EXPECT_DOUBLE_EQ(own_error(*silu(ctx, x)), 4 * u32 * u32 / 3) << "a function in a few steps";
    EXPECT_DOUBLE_EQ(own_error(*mul_mat(ctx, wf, x)), (1 + 64) * u32 * u32 / 3) << "a sum of 64 products";
    EXPECT_DOUBLE_EQ(own_error(*mul_mat(ctx, wh, x)), (1 + 64) * u32 * u32 / 3 + u16 * u16 / 3)
        << "activations in f16 as the weights";
    EXPECT_DOUBLE_EQ(own_error(*mul_mat(ctx, wq, x)), (1 + 64) * u32 * u32 / 3 + quantization_nmse_bound(DType::Q8_0))
        << "activations in 8-bit blocks";
    EXPECT_EQ(own_error(*cont(ctx, transpose(ctx, x))), 0.0) << "a copy is exact";
    EXPECT_DOUBLE_EQ(own_error(*cpy(ctx, x, ctx.new_tensor(DType::F16, {64, 4}))), u16 * u16 / 3) << "rounded to f16";
    EXPECT_EQ(own_error(*argmax(ctx, x)), 0.0) << "integers";
}

// q4_0 weights times activations, copied, scaled: the product's perturbation comes out at its own
// error, the exact copy carries it unchanged, and the graph's own results are left alone.
TEST(PropagateOwnError, PerturbsEachNodeByItsOwnErrorAndCarriesIt) {
    auto cpu = global_registry().init_by_name("CPU").value();
    Context ctx;
    Tensor* x = ctx.new_tensor(DType::F32, {64, 8});
    x->set_input();
    Tensor* w = ctx.new_tensor(DType::Q4_0, {64, 32});
    Tensor* prod = mul_mat(ctx, w, x);
    Tensor* moved = cont(ctx, transpose(ctx, prod));
    Tensor* out = scale(ctx, moved, 3.0f);
    out->set_output();
    Graph g = Graph::build({out}).value();
    auto buf = alloc_ctx_tensors(ctx, *cpu).value();
    ASSERT_TRUE(tensor_set_f32(*w, xbt::normal_values(64 * 32, 1)).is_ok());
    ASSERT_TRUE(tensor_set_f32(*x, xbt::normal_values(64 * 8, 2)).is_ok());
    ASSERT_TRUE(cpu->graph_compute(g).is_ok());
    const std::vector<float> before = tensor_get_f32(*out).value();

    const ErrorBudget b = propagate_own_error(*cpu, g, 8, 42).value();
    auto at = [&](const std::vector<double>& v, const Tensor* t) { return v[static_cast<size_t>(g.ref_of(t).index())]; };
    EXPECT_EQ(b.draws, 8);
    EXPECT_NEAR(at(b.propagated, prod) / at(b.own, prod), 1.0, 0.2);
    EXPECT_DOUBLE_EQ(at(b.propagated, moved), at(b.propagated, prod)) << "an exact copy carries the error as it is";
    EXPECT_NEAR(at(b.propagated, out) / at(b.propagated, prod), 1.0, 0.01) << "a scale adds a rounding";
    EXPECT_EQ(tensor_get_f32(*out).value(), before) << "the graph's results are read, never changed";
    EXPECT_EQ(propagate_own_error(*cpu, g, 8, 42).value().propagated, b.propagated) << "seeded";
}

}  // namespace
}  // namespace xb
