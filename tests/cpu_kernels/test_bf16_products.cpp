// Products of bf16 weights on the CPU device: where the CPU has AVX512-BF16 one-token products take
// the bf16 row dots and many columns the bf16 tile, whose activations are rounded to bf16 to
// nearest even (as ggml's CPU rounds them), and the result must be that exactly up to f32 sums;
// elsewhere the f32 kernels keep the activations in f32. The op tests' tolerance would pass a
// truncating rounding; this would not.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "alloc/context_alloc.hpp"
#include "builtin/builtin_backends.hpp"
#include "backend/tensor_io.hpp"
#include "core/dtype.hpp"
#include "core/graph.hpp"
#include "core/ops.hpp"
#include "cpu_kernels/matmul_tiles.hpp"
#include "test_values.hpp"

namespace xb {
namespace {

// K odd (a last half pair) and past whole blocks of 32 and 64; 70 rows: whole walks of 8 rows
// and a rest; one column (the one-token product, gemv_bf16) and 45 (the packed tile).
struct Bf16Case {
    int64_t k, n;
};
class Bf16Products : public ::testing::TestWithParam<Bf16Case> {};

TEST_P(Bf16Products, RoundTheActivationsToNearestEvenWhereTheBf16KernelsRun) {
    const int64_t k = GetParam().k, m = 70, n = GetParam().n;
    const std::vector<float> a_values = xbt::uniform_values(static_cast<size_t>(k * m), 21);
    const std::vector<float> b_values = xbt::uniform_values(static_cast<size_t>(k * n), 22);
    auto cpu = global_registry().init_by_name("CPU");
    ASSERT_TRUE(cpu.is_ok()) << cpu.status().message();
    Context ctx;
    Tensor* a = ctx.new_tensor(DType::BF16, {k, m});
    Tensor* b = ctx.new_tensor(DType::F32, {k, n});
    Tensor* out = mul_mat(ctx, a, b);
    auto graph = Graph::build({out});
    ASSERT_TRUE(graph.is_ok());
    auto buffer = alloc_ctx_tensors(ctx, **cpu);
    ASSERT_TRUE(buffer.is_ok()) << buffer.status().message();
    ASSERT_TRUE(tensor_set_f32(*a, a_values).is_ok());
    ASSERT_TRUE(tensor_set_f32(*b, b_values).is_ok());
    ASSERT_TRUE((*cpu)->graph_compute(*graph).is_ok());
    auto got = tensor_get_f32(*out);
    ASSERT_TRUE(got.is_ok());

    const bool rounds = cpu_kernels::bf16_gemm_kernel() != nullptr;
    for (int64_t j = 0; j < n; ++j) {
        for (int64_t i = 0; i < m; ++i) {
            double want = 0.0, magnitude = 0.0;
            for (int64_t e = 0; e < k; ++e) {
                const double w = bf16_to_f32(f32_to_bf16(a_values[static_cast<size_t>(i * k + e)]));
                const float x = b_values[static_cast<size_t>(j * k + e)];
                const double act = rounds ? bf16_to_f32(f32_to_bf16(x)) : x;
                want += w * act;
                magnitude += std::fabs(w * act);
            }
            // f32 sums: a few ulps of the magnitude; rounding the activations another way moves
            // a sum by about 2^-9 of it.
            EXPECT_NEAR((*got)[static_cast<size_t>(j * m + i)], want, 4e-7 * magnitude + 1e-7)
                << (rounds ? "bf16 kernels" : "f32 kernels") << " at row " << i << ", column " << j;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, Bf16Products,
                         ::testing::Values(Bf16Case{301, 45}, Bf16Case{301, 1}, Bf16Case{64, 1}, Bf16Case{95, 1},
                                           Bf16Case{4099, 1}, Bf16Case{1, 1}),
                         [](const ::testing::TestParamInfo<Bf16Case>& info) {
                             return "k" + std::to_string(info.param.k) + "_n" + std::to_string(info.param.n);
                         });

}  // namespace
}  // namespace xb
