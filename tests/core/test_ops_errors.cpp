// Bad inputs of the op builders (Graph::build fails with InvalidArgument naming the op) and errors
// found in the data at compute time (an out-of-range row index is a status, not a crash).
#include <cstdint>
#include <vector>

#include "alloc/context_alloc.hpp"
#include "backend/registry.hpp"
#include "builtin/builtin_backends.hpp"
#include "backend/tensor_io.hpp"
#include "core/graph.hpp"
#include "op_test_util.hpp"

namespace xbt {

namespace {

using xb::DType;
using xb::Tensor;

// --- builder errors ------------------------------------------------------------------------------

struct BadBuild {
    std::string name;
    const char* op;  // the op the error message must name
    std::function<Tensor*(xb::Context&)> build;
};
void PrintTo(const BadBuild& c, std::ostream* os) { *os << c.name; }

Tensor* f32(xb::Context& ctx, Shape ne) {
    return ctx.new_tensor(DType::F32, std::span<const int64_t>(ne.data(), ne.size()));
}

std::vector<BadBuild> bad_builds() {
    return {
        {"add_not_broadcastable", "add",
         [](xb::Context& c) {
             return xb::add(c, f32(c, {7, 3, 1, 1}), f32(c, {4, 3, 1, 1}));
         }},
        {"mul_b_larger_than_a", "mul",
         [](xb::Context& c) {
             return xb::mul(c, f32(c, {7, 1, 1, 1}), f32(c, {7, 3, 1, 1}));
         }},
        {"mul_mat_k_mismatch", "mul_mat",
         [](xb::Context& c) {
             return xb::mul_mat(c, f32(c, {8, 3, 1, 1}), f32(c, {7, 2, 1, 1}));
         }},
        {"mul_mat_batch_not_divisible", "mul_mat",
         [](xb::Context& c) {
             return xb::mul_mat(c, f32(c, {8, 3, 3, 1}), f32(c, {8, 2, 4, 1}));
         }},
        {"out_prod_k_mismatch", "out_prod",
         [](xb::Context& c) {
             return xb::out_prod(c, f32(c, {5, 3, 1, 1}), f32(c, {4, 2, 1, 1}));
         }},
        {"rope_odd_n_dims", "rope",
         [](xb::Context& c) {
             xb::RopeParams p;
             p.n_dims = 5;
             return xb::rope(c, f32(c, {8, 2, 3, 1}), c.new_tensor(DType::I32, {3}), p);
         }},
        {"rope_n_dims_past_head", "rope",
         [](xb::Context& c) {
             xb::RopeParams p;
             p.n_dims = 10;
             return xb::rope(c, f32(c, {8, 2, 3, 1}), c.new_tensor(DType::I32, {3}), p);
         }},
        {"rope_positions_count", "rope",
         [](xb::Context& c) {
             xb::RopeParams p;
             p.n_dims = 8;
             return xb::rope(c, f32(c, {8, 2, 3, 1}), c.new_tensor(DType::I32, {4}), p);
         }},
        {"get_rows_f32_indices", "get_rows",
         [](xb::Context& c) {
             return xb::get_rows(c, f32(c, {5, 4, 1, 1}), f32(c, {2, 1, 1, 1}));
         }},
        {"set_rows_index_bcast", "set_rows",
         [](xb::Context& c) {
             return xb::set_rows(c, f32(c, {5, 6, 3, 1}), f32(c, {5, 2, 3, 1}), c.new_tensor(DType::I32, {2, 2}));
         }},
        {"view_past_end", "view",
         [](xb::Context& c) {
             Tensor* a = f32(c, {8, 4, 1, 1});
             return xb::view_2d(c, a, 8, 3, a->nb[1], 2 * a->nb[1]);
         }},
        {"reshape_count", "reshape",
         [](xb::Context& c) {
             return xb::reshape(c, f32(c, {6, 4, 1, 1}), {5, 5, 1, 1});
         }},
        {"cpy_count", "cpy",
         [](xb::Context& c) {
             return xb::cpy(c, f32(c, {6, 4, 1, 1}), f32(c, {5, 5, 1, 1}));
         }},
        {"cast_into_read_only_format", "cpy",
         [](xb::Context& c) { return xb::cast(c, f32(c, {256, 2, 1, 1}), DType::IQ2_XXS); }},
        {"concat_other_dim_differs", "concat",
         [](xb::Context& c) {
             return xb::concat(c, f32(c, {5, 3, 1, 1}), f32(c, {5, 4, 1, 1}), 0);
         }},
        {"glu_odd_ne0", "glu",
         [](xb::Context& c) {
             return xb::glu(c, f32(c, {7, 3, 1, 1}), xb::GluOp::SwiGlu);
         }},
        {"soft_max_mask_too_few_rows", "soft_max",
         [](xb::Context& c) {
             return xb::soft_max_ext(c, f32(c, {8, 5, 1, 1}), f32(c, {8, 4, 1, 1}), 1.0f, 0.0f);
         }},
        {"soft_max_alibi_without_mask", "soft_max",
         [](xb::Context& c) {
             return xb::soft_max_ext(c, f32(c, {8, 5, 1, 1}), nullptr, 1.0f, 8.0f);
         }},
        {"flash_attn_ext_heads_not_divisible", "flash_attn_ext",
         [](xb::Context& c) {
             return xb::flash_attn_ext(c, f32(c, {16, 3, 6, 1}), f32(c, {16, 5, 4, 1}), f32(c, {16, 5, 4, 1}), nullptr,
                                       0.25f);
         }},
        // The first error is sticky: later builders on its placeholder keep it.
        {"error_sticks_through_later_ops", "add",
         [](xb::Context& c) {
             Tensor* bad = xb::add(c, f32(c, {7, 3, 1, 1}), f32(c, {4, 3, 1, 1}));
             return xb::soft_max(c, xb::mul_mat(c, bad, f32(c, {7, 2, 1, 1})));
         }},
    };
}

class OpBuildErrors : public testing::TestWithParam<BadBuild> {};

TEST_P(OpBuildErrors, GraphBuildFailsNamingTheOp) {
    const BadBuild& c = GetParam();
    xb::Context ctx;
    Tensor* out = c.build(ctx);
    ASSERT_NE(out, nullptr);
    auto graph = xb::Graph::build({out});
    ASSERT_FALSE(graph.is_ok());
    EXPECT_EQ(graph.status().code(), xb::StatusCode::InvalidArgument) << graph.status().to_string();
    EXPECT_EQ(graph.status().message().rfind(std::string(c.op) + ":", 0), 0u)
        << "message should start with '" << c.op << ":': " << graph.status().message();
}

INSTANTIATE_TEST_SUITE_P(Builders, OpBuildErrors, testing::ValuesIn(bad_builds()),
                         [](const testing::TestParamInfo<BadBuild>& info) { return info.param.name; });

// The codebook formats and nvfp4 are read-only (as in ggml): the error names the type; reading them
// (a cast to f32) and copying them as they are build.
TEST(OpBuildErrors, ReadOnlyFormatsAreNamedAndStillRead) {
    for (DType t : {DType::IQ1_S, DType::IQ1_M, DType::IQ2_XXS, DType::IQ2_XS, DType::IQ2_S, DType::IQ3_XXS,
                    DType::IQ3_S, DType::NVFP4}) {
        xb::Context ctx;
        auto bad = xb::Graph::build({xb::cast(ctx, f32(ctx, {256, 2, 1, 1}), t)});
        ASSERT_FALSE(bad.is_ok()) << xb::dtype_name(t);
        EXPECT_NE(bad.status().message().find(std::string("to ") + xb::dtype_name(t) + ": a read-only format"),
                  std::string::npos)
            << bad.status().message();
        xb::Context ok_ctx;
        Tensor* w = ok_ctx.new_tensor(t, {256, 2});
        EXPECT_TRUE(xb::Graph::build({xb::cast(ok_ctx, w, DType::F32)}).is_ok()) << xb::dtype_name(t);
        EXPECT_TRUE(xb::Graph::build({xb::cpy(ok_ctx, w, ok_ctx.new_tensor(t, {256, 2}))}).is_ok()) << xb::dtype_name(t);
    }
}

// --- compute-time errors -------------------------------------------------------------------------

class OpRuntimeErrors : public testing::TestWithParam<std::string> {};

// The status of computing `out` (of `ctx`) on `backend`, its inputs set by set_inputs(rng) once
// allocated there; a backend that does not support the op says so in *skip instead.
template <typename SetInputs>
xb::Status compute_node(xb::Backend& backend, xb::Context& ctx, Tensor* out, SetInputs&& set_inputs, std::string* skip) {
    auto graph = xb::Graph::build({out});
    XB_RETURN_IF_ERROR(graph.status());
    if (!backend.supports_op(*out)) {
        *skip = std::string(backend.name()) + " does not support " + out->op_label();
        return xb::Status::ok();
    }
    XB_ASSIGN_OR_RETURN(auto buffer, xb::alloc_ctx_tensors(ctx, backend));
    std::mt19937 rng(7);
    XB_RETURN_IF_ERROR(set_inputs(rng));
    return backend.graph_compute(*graph);
}

// get_rows of a [5, 4] matrix at i32 indices `rows`; returns the status of graph_compute.
xb::Status compute_get_rows(xb::Backend& backend, const std::vector<int32_t>& rows, std::string* skip) {
    xb::Context ctx;
    Tensor* a = ctx.new_tensor(DType::F32, {5, 4});
    Tensor* idx = ctx.new_tensor(DType::I32, {static_cast<int64_t>(rows.size())});
    auto set_inputs = [&](std::mt19937& rng) {
        XB_RETURN_IF_ERROR(xb::tensor_set_f32(*a, uniform(-1.0f, 1.0f)(a->ne, rng)));
        return xb::tensor_set(*idx, rows.data(), 0, rows.size() * sizeof(int32_t));
    };
    return compute_node(backend, ctx, xb::get_rows(ctx, a, idx), set_inputs, skip);
}

TEST_P(OpRuntimeErrors, GetRowsIndexOutOfRangeIsAStatus) {
    auto backend = xb::global_registry().init_by_name(GetParam());
    ASSERT_TRUE(backend.is_ok()) << backend.status().to_string();
    for (const std::vector<int32_t>& rows : {std::vector<int32_t>{1, 4, 0}, std::vector<int32_t>{-1, 2}}) {
        std::string skip;
        const xb::Status status = compute_get_rows(**backend, rows, &skip);
        if (!skip.empty()) GTEST_SKIP() << skip;
        EXPECT_EQ(status.code(), xb::StatusCode::OutOfRange) << status.to_string();
        EXPECT_NE(status.message().find("get_rows"), std::string::npos) << status.message();
    }
}

TEST_P(OpRuntimeErrors, GetRowsInRangeStillComputesAfterAnError) {
    auto backend = xb::global_registry().init_by_name(GetParam());
    ASSERT_TRUE(backend.is_ok()) << backend.status().to_string();
    std::string skip;
    const xb::Status bad = compute_get_rows(**backend, {0, 7}, &skip);
    if (!skip.empty()) GTEST_SKIP() << skip;
    EXPECT_FALSE(bad.is_ok());
    const xb::Status status = compute_get_rows(**backend, {3, 0, 2}, &skip);
    EXPECT_TRUE(status.is_ok()) << status.to_string();
}

// mul_mat_id of 3 q4_0 experts [64, 5] over `tokens` tokens choosing 2 each, one id being `bad`;
// returns the status of graph_compute. Few tokens take a GPU's per-pair kernel, many its grouped tiles.
xb::Status compute_mul_mat_id(xb::Backend& backend, int64_t tokens, int32_t bad, std::string* skip) {
    xb::Context ctx;
    Tensor* as = ctx.new_tensor(DType::Q4_0, {64, 5, 3});
    Tensor* b = ctx.new_tensor(DType::F32, {64, 1, tokens});
    Tensor* ids = ctx.new_tensor(DType::I32, {2, tokens});
    std::vector<int32_t> chosen(static_cast<size_t>(2 * tokens));
    for (size_t i = 0; i < chosen.size(); ++i) chosen[i] = static_cast<int32_t>(i % 3);
    chosen[chosen.size() / 2] = bad;
    auto set_inputs = [&](std::mt19937& rng) {
        XB_RETURN_IF_ERROR(xb::tensor_set_f32(*as, uniform(-1.0f, 1.0f)(as->ne, rng)));
        XB_RETURN_IF_ERROR(xb::tensor_set_f32(*b, uniform(-1.0f, 1.0f)(b->ne, rng)));
        return xb::tensor_set(*ids, chosen.data(), 0, chosen.size() * sizeof(int32_t));
    };
    return compute_node(backend, ctx, xb::mul_mat_id(ctx, as, b, ids), set_inputs, skip);
}

TEST_P(OpRuntimeErrors, MulMatIdExpertOutOfRangeIsAStatus) {
    auto backend = xb::global_registry().init_by_name(GetParam());
    ASSERT_TRUE(backend.is_ok()) << backend.status().to_string();
    for (int64_t tokens : {int64_t{1}, int64_t{3}, int64_t{40}}) {
        for (int32_t bad : {3, -1}) {
            std::string skip;
            const xb::Status status = compute_mul_mat_id(**backend, tokens, bad, &skip);
            if (!skip.empty()) GTEST_SKIP() << skip;
            EXPECT_EQ(status.code(), xb::StatusCode::OutOfRange) << tokens << " tokens: " << status.to_string();
            EXPECT_NE(status.message().find("mul_mat_id"), std::string::npos) << status.message();
        }
        std::string skip;
        const xb::Status fine = compute_mul_mat_id(**backend, tokens, 2, &skip);
        EXPECT_TRUE(fine.is_ok()) << tokens << " tokens: " << fine.to_string();
    }
}

INSTANTIATE_TEST_SUITE_P(Devices, OpRuntimeErrors, testing::ValuesIn(device_names()),
                         [](const testing::TestParamInfo<std::string>& info) { return test_name(info.param); });

}  // namespace

}  // namespace xbt
