// The llama-style decoder builder: its attention variants agree, and its KV cache gives a decode
// step the same logits as the prefill of the whole sequence.
#include <gtest/gtest.h>

#include <random>

#include "alloc/context_alloc.hpp"
#include "alloc/graph_allocator.hpp"
#include "backend/registry.hpp"
#include "builtin/builtin_backends.hpp"
#include "backend/tensor_io.hpp"
#include "models/decoder.hpp"
#include "report/metrics.hpp"

namespace xb {
namespace {

DecoderParams small_params() {
    DecoderParams p;
    p.n_layers = 2;
    p.n_embd = 64;
    p.n_head = 4;
    p.n_head_kv = 2;  // grouped-query attention
    p.n_ff = 96;
    p.n_tokens = 7;
    p.n_vocab = 50;
    return p;
}

// A decoder with its weights, caches and inputs allocated and set; weights drawn from `seed`.
struct Instance {
    Context ctx;
    DecoderParams params;
    Decoder model{};
    Graph graph;
    std::unique_ptr<MultiBuffer> weights;
    std::unique_ptr<GraphAllocator> galloc;
};

std::unique_ptr<Instance> make_instance(const DecoderParams& p, uint32_t seed, const std::vector<int32_t>& tokens) {
    auto in = std::make_unique<Instance>();
    in->params = p;
    auto m = build_decoder(in->ctx, p);
    EXPECT_TRUE(m.is_ok()) << m.status().to_string();
    in->model = std::move(m).value();
    in->graph = Graph::build(in->model.graph_outputs).value();
    BufferType& cpu = global_registry().dev_by_name("CPU")->buffer_type();
    in->weights = alloc_tensors(in->model.weights(), cpu).value();
    in->galloc = std::make_unique<GraphAllocator>(cpu);
    EXPECT_TRUE(in->galloc->alloc_graph(in->graph).is_ok());
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-0.1f, 0.1f);
    for (Tensor* w : in->model.weights()) {
        std::vector<float> v(static_cast<size_t>(w->nelements()));
        for (float& x : v) x = w->name.find("norm") != std::string::npos ? 1.0f + dist(rng) : dist(rng);
        EXPECT_TRUE(tensor_set_f32(*w, v).is_ok());
    }
    const std::vector<int32_t> pos = batch_positions(p);
    EXPECT_TRUE(tensor_set(*in->model.tokens, tokens.data(), 0, in->model.tokens->nbytes()).is_ok());
    EXPECT_TRUE(tensor_set(*in->model.positions, pos.data(), 0, in->model.positions->nbytes()).is_ok());
    EXPECT_TRUE(tensor_set_f32(*in->model.kq_mask, causal_mask_values(p.n_attended(), p.n_tokens)).is_ok());
    return in;
}

std::vector<float> compute_logits(Instance& in) {
    auto cpu = global_registry().init_by_name("CPU");
    EXPECT_TRUE((*cpu)->graph_compute(in.graph).is_ok());
    return tensor_get_f32(*in.model.logits).value();
}

double nmse(const std::vector<float>& a, const std::vector<float>& b) { return report::compare(a, b).nmse; }

const std::vector<int32_t> kTokens = {3, 17, 42, 8, 0, 49, 23};

TEST(Decoder, FlashAndSoftmaxAttentionAgree) {
    DecoderParams p = small_params();
    auto flash = make_instance(p, 1, kTokens);
    p.flash_attn = false;
    auto softmax = make_instance(p, 1, kTokens);
    const auto a = compute_logits(*flash);
    const auto b = compute_logits(*softmax);
    ASSERT_EQ(a.size(), static_cast<size_t>(p.n_vocab * p.n_tokens));
    // Both are f32 throughout; they differ only in summation order (online vs two-pass softmax).
    EXPECT_LT(nmse(a, b), 1e-10);
}

TEST(Decoder, CacheOfTheBatchSizeMatchesNoCache) {
    DecoderParams p = small_params();
    auto plain = make_instance(p, 2, kTokens);
    p.n_kv = p.n_tokens;
    auto cached = make_instance(p, 2, kTokens);
    EXPECT_LT(nmse(compute_logits(*cached), compute_logits(*plain)), 1e-12);
}

// Prefill 7 tokens, then decode the 7th again as a single token over the cache the prefill
// wrote: its logits must equal the prefill's logits of that token.
TEST(Decoder, DecodeStepOverTheCacheMatchesPrefill) {
    DecoderParams p = small_params();
    p.n_kv = p.n_tokens;
    auto prefill = make_instance(p, 3, kTokens);
    const auto all = compute_logits(*prefill);

    DecoderParams d = p;
    d.n_tokens = 1;
    auto decode = make_instance(d, 3, {kTokens.back()});
    for (size_t il = 0; il < prefill->model.k_cache.size(); ++il) {
        // Zero the decode step's own slot first: the step must write it, not find it.
        ASSERT_TRUE(tensor_copy(*prefill->model.k_cache[il], *decode->model.k_cache[il]).is_ok());
        ASSERT_TRUE(tensor_copy(*prefill->model.v_cache[il], *decode->model.v_cache[il]).is_ok());
        const size_t row = decode->model.k_cache[il]->nb[1];
        ASSERT_TRUE(tensor_memset(*decode->model.k_cache[il], 0, row * (p.n_kv - 1), row).is_ok());
        ASSERT_TRUE(tensor_memset(*decode->model.v_cache[il], 0, row * (p.n_kv - 1), row).is_ok());
    }
    const auto last = compute_logits(*decode);
    const std::vector<float> want(all.end() - p.n_vocab, all.end());
    EXPECT_LT(nmse(last, want), 1e-10);
}

TEST(Decoder, BadParametersAreErrors) {
    Context ctx;
    DecoderParams p = small_params();
    p.n_head = 5;
    EXPECT_EQ(build_decoder(ctx, p).status().code(), StatusCode::InvalidArgument);
    p = small_params();
    p.n_kv = 3;  // smaller than the batch
    EXPECT_EQ(build_decoder(ctx, p).status().code(), StatusCode::InvalidArgument);
}

}  // namespace
}  // namespace xb
