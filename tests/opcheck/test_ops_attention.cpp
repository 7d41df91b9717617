// Conformance of the attention ops (soft_max_ext, diag_mask_inf, rope, flash_attn_ext) on every
// device against the float64 reference; the cases are in lib/opcheck/cases_attention.cpp.
#include <cmath>
#include <random>

#include "alloc/context_alloc.hpp"
#include "backend/registry.hpp"
#include "backend/tensor_io.hpp"
#include "builtin/builtin_backends.hpp"
#include "core/ops.hpp"
#include "op_test_util.hpp"

namespace xbt {

XB_OP_CASES(Attention, attention_cases());

// A KV cache's unwritten slots may hold anything: keys that the mask hides from every query must
// not reach the result even when they are NaN or infinite, and a V row that only later queries see
// must not reach the earlier ones. 20 queries take the CPU's tiled path (tiles of 16).
TEST(FlashAttention, MaskedKeysNeverReachTheResultEvenWhenNotFinite) {
    constexpr int64_t d = 32, n_q = 20, n_kv = 48, n_head = 2, kInfRow = 30, kFirstUnwritten = 40;
    auto backend = xb::global_registry().init_by_name("CPU");
    ASSERT_TRUE(backend.is_ok());
    const auto run = [&](bool garbage) {
        xb::Context ctx;
        xb::Tensor* q = ctx.new_tensor(xb::DType::F32, {d, n_q, n_head, 1});
        xb::Tensor* k = ctx.new_tensor(xb::DType::F32, {d, n_kv, n_head, 1});
        xb::Tensor* v = ctx.new_tensor(xb::DType::F32, {d, n_kv, n_head, 1});
        xb::Tensor* mask = ctx.new_tensor(xb::DType::F16, {n_kv, n_q, 1, 1});
        xb::Tensor* out = xb::flash_attn_ext(ctx, q, k, v, mask, 0.2f, 0.0f, 0.0f);
        auto graph = xb::Graph::build({out});
        auto buffer = xb::alloc_ctx_tensors(ctx, **backend);
        EXPECT_TRUE(graph.is_ok() && buffer.is_ok());
        std::mt19937 rng(11);
        std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
        std::vector<float> qv(static_cast<size_t>(q->nelements())), kv(static_cast<size_t>(k->nelements())), vv(kv.size());
        for (float& x : qv) x = dist(rng);
        for (float& x : kv) x = dist(rng);
        for (float& x : vv) x = dist(rng);
        for (int64_t h = 0; h < n_head; ++h) {
            for (int64_t i = 0; i < d; ++i) {
                const size_t inf_at = static_cast<size_t>(i + d * (kInfRow + n_kv * h));
                vv[inf_at] = garbage ? INFINITY : 0.0f;
                for (int64_t j = kFirstUnwritten; j < n_kv; ++j) {
                    const size_t at = static_cast<size_t>(i + d * (j + n_kv * h));
                    kv[at] = garbage ? NAN : 0.0f;
                    vv[at] = garbage ? (j % 2 ? NAN : -INFINITY) : 0.0f;
                }
            }
        }
        // Query i sees keys up to 20 + i: key 30 from query 10 on, keys 40.. never.
        std::vector<float> mv(static_cast<size_t>(mask->nelements()));
        for (int64_t i = 0; i < n_q; ++i) {
            for (int64_t j = 0; j < n_kv; ++j) mv[static_cast<size_t>(j + n_kv * i)] = j <= 20 + i ? 0.0f : -INFINITY;
        }
        EXPECT_TRUE(xb::tensor_set_f32(*q, qv).is_ok() && xb::tensor_set_f32(*k, kv).is_ok() &&
                    xb::tensor_set_f32(*v, vv).is_ok() && xb::tensor_set_f32(*mask, mv).is_ok());
        EXPECT_TRUE((*backend)->graph_compute(*graph).is_ok());
        return xb::tensor_get_f32(*out).value();  // [d, n_head, n_q]
    };
    const std::vector<float> clean = run(false), dirty = run(true);
    for (int64_t i = 0; i < n_q; ++i) {
        for (int64_t h = 0; h < n_head; ++h) {
            for (int64_t e = 0; e < d; ++e) {
                const size_t at = static_cast<size_t>(e + d * (h + n_head * i));
                if (i < kInfRow - 20) {
                    ASSERT_TRUE(std::isfinite(dirty[at])) << "query " << i;
                    EXPECT_NEAR(dirty[at], clean[at], 1e-5f) << "query " << i;
                } else {
                    EXPECT_FALSE(std::isfinite(dirty[at])) << "query " << i << " attends the infinite V row";
                }
            }
        }
    }
}

}  // namespace xbt
