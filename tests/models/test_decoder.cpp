// The decoder builder: its attention paths agree, and its KV cache gives a decode step the same
// logits as the prefill of the whole sequence, for llama's decoder and for each architecture's
// variant (sliding windows, soft-caps, sinks, experts, latent attention); the sliding-window mask.
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <random>

#include "alloc/context_alloc.hpp"
#include "alloc/graph_allocator.hpp"
#include "backend/registry.hpp"
#include "builtin/builtin_backends.hpp"
#include "backend/tensor_io.hpp"
#include "models/architectures.hpp"
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

// Phi-3's files hold one fused QKV matrix: the synthetic source says it has one, so that phi3's
// layers make it (the other architectures do not look for it).
decoder::WeightSource synthetic_source() {
    decoder::WeightSource source;
    source.has = [](const std::string& name) { return name.find("attn_qkv.weight") != std::string::npos; };
    return source;
}

std::unique_ptr<Instance> make_instance(const DecoderParams& p, uint32_t seed, const std::vector<int32_t>& tokens,
                                        const Architecture& arch = llama_architecture()) {
    auto in = std::make_unique<Instance>();
    in->params = p;
    auto m = build_model(in->ctx, arch, p, synthetic_source());
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
    if (in->model.positions != nullptr) {
        EXPECT_TRUE(tensor_set(*in->model.positions, pos.data(), 0, in->model.positions->nbytes()).is_ok());
    }
    if (in->model.kv_idxs != nullptr) {  // the batch's keys and values go to the cells of its positions
        EXPECT_TRUE(tensor_set(*in->model.kv_idxs, pos.data(), 0, in->model.kv_idxs->nbytes()).is_ok());
    }
    EXPECT_TRUE(tensor_set_f32(*in->model.kq_mask, causal_mask_values(p.n_attended(), p.n_tokens, 0, p.n_cells())).is_ok());
    if (in->model.kq_mask_swa != nullptr) {
        EXPECT_TRUE(
            tensor_set_f32(*in->model.kq_mask_swa, causal_mask_values(p.n_attended(), p.n_tokens, p.swa.window, p.n_cells())).is_ok());
    }
    if (in->model.out_ids != nullptr) {
        const std::vector<int32_t> rows = output_row_ids(p);
        EXPECT_TRUE(tensor_set(*in->model.out_ids, rows.data(), 0, in->model.out_ids->nbytes()).is_ok());
    }
    if (in->model.state_ids != nullptr) {
        const int32_t slot = 0;
        EXPECT_TRUE(tensor_set(*in->model.state_ids, &slot, 0, sizeof(slot)).is_ok());
    }
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

// The architectures, small: each sets the hyperparameters its entry reads from a file; the
// architecture's own file names its weights and builds its layers.
struct Variant {
    const char* name;
    std::function<void(DecoderParams&)> set;
};
void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

const std::vector<Variant> kVariants = {
    {"llama", [](DecoderParams&) {}},
    {"gemma2", [](DecoderParams& p) {
         p.embd_scale = 8.0f;
         p.q_scale = 0.25f;
         p.attn_softcap = 5.0f;
         p.final_softcap = 3.0f;
         p.swa.window = 3;
         p.swa.pattern = 2;
         p.swa.rope_freq_base = p.rope_freq_base;
     }},
    {"gemma3", [](DecoderParams& p) {
         p.n_layers = 3;
         p.swa.window = 2;
         p.swa.pattern = 3;  // layers 0 and 1 slide with their own rope base, layer 2 does not
         p.swa.rope_freq_base = 1000.0f;
     }},
    {"phi3", [](DecoderParams&) {}},
    {"gpt-oss", [](DecoderParams& p) {
         p.experts = {.n_expert = 4, .n_used = 2, .n_ff = 32, .gating = ExpertGating::SoftmaxOfChosen, .biases = true};
         p.swa.window = 3;
         p.swa.pattern = 2;
         p.swa.rope_freq_base = p.rope_freq_base;
     }},
    {"qwen3moe", [](DecoderParams& p) {
         p.experts = {.n_expert = 4, .n_used = 2, .n_ff = 32, .normalize = true};
     }},
    {"deepseek2", [](DecoderParams& p) {
         p.n_head_kv = 1;
         p.rope_mode = RopeMode::Normal;
         p.rope_n_dims = 8;
         p.mla = {.q_lora_rank = 24, .kv_lora_rank = 32, .qk_nope = 16, .v_head = 12};
         p.n_dense_lead = 1;
         p.experts = {.n_expert = 8, .n_used = 2, .n_ff = 16, .gating = ExpertGating::Sigmoid, .normalize = true,
                      .weights_scale = 2.5f, .selection_bias = true, .n_group = 4, .n_group_used = 2, .n_shared = 1};
     }},
};

class DecoderVariant : public ::testing::TestWithParam<Variant> {
protected:
    DecoderParams params() const {
        DecoderParams p = small_params();
        GetParam().set(p);
        return p;
    }
    const Architecture& arch() const { return *find_architecture(GetParam().name); }
};

TEST_P(DecoderVariant, FlashAndSoftmaxAttentionAgree) {
    DecoderParams p = params();
    p.n_kv = 12;  // a window smaller than the cache, which begins with 5 empty positions
    auto flash = make_instance(p, 4, kTokens, arch());
    p.flash_attn = false;
    auto softmax = make_instance(p, 4, kTokens, arch());
    EXPECT_LT(nmse(compute_logits(*flash), compute_logits(*softmax)), 1e-10);
}

// Prefill 7 tokens, then decode the 7th again as a single token over the cache the prefill wrote
// (its own slot zeroed first: the step must write it, not find it): its logits must equal the
// prefill's logits of that token, so the step's windows, sinks, experts and latent cache see what
// the prefill's last token saw.
TEST_P(DecoderVariant, DecodeStepOverTheCacheMatchesPrefill) {
    DecoderParams p = params();
    p.n_kv = p.n_tokens;
    auto prefill = make_instance(p, 5, kTokens, arch());
    const auto all = compute_logits(*prefill);
    DecoderParams d = p;
    d.n_tokens = 1;
    auto decode = make_instance(d, 5, {kTokens.back()}, arch());
    ASSERT_EQ(decode->model.k_cache.size(), prefill->model.k_cache.size());
    for (size_t il = 0; il < prefill->model.k_cache.size(); ++il) {
        ASSERT_TRUE(tensor_copy(*prefill->model.k_cache[il], *decode->model.k_cache[il]).is_ok());
        const size_t row = decode->model.k_cache[il]->nb[1];
        ASSERT_TRUE(tensor_memset(*decode->model.k_cache[il], 0, row * (p.n_kv - 1), row).is_ok());
        if (il < prefill->model.v_cache.size()) {
            ASSERT_TRUE(tensor_copy(*prefill->model.v_cache[il], *decode->model.v_cache[il]).is_ok());
            ASSERT_TRUE(tensor_memset(*decode->model.v_cache[il], 0, row * (p.n_kv - 1), row).is_ok());
        }
    }
    const std::vector<float> want(all.end() - p.n_vocab, all.end());
    EXPECT_LT(nmse(compute_logits(*decode), want), 1e-10);
}

// Every variant's pieces reach the graph: each layer's attention reads the sliding-window mask
// exactly when the layer slides, and the variant's logits differ from llama's (phi3's fused
// matrices must give llama's).
TEST_P(DecoderVariant, SlidingLayersReadTheWindowMaskAndTheVariantMatters) {
    const DecoderParams p = params();
    auto in = make_instance(p, 6, kTokens, arch());
    int attentions = 0;
    for (int i = 0; i < in->graph.n_nodes(); ++i) {
        const Tensor* node = in->graph.node(i);
        if (node->op != Op::FlashAttnExt) continue;
        const int il = attentions++;
        EXPECT_EQ(node->src[3], p.swa.slides(il) ? in->model.kq_mask_swa : in->model.kq_mask) << GetParam().name << " layer " << il;
    }
    EXPECT_EQ(attentions, p.n_layers);
    const std::string name = GetParam().name;
    if (name == "llama") return;
    DecoderParams plain = small_params();
    plain.n_layers = p.n_layers;
    auto llama = make_instance(plain, 6, kTokens);
    const double e = nmse(compute_logits(*in), compute_logits(*llama));
    if (name == "phi3") {
        // Its fused QKV and gate/up matrices draw the same values in the same order as llama's
        // separate ones: split right, they compute the same model.
        EXPECT_LT(e, 1e-12);
    } else {
        EXPECT_GT(e, 1e-6);
    }
}

// Logits for the last positions only (llama.cpp's inp_out_ids): the rows shrink after the last
// layer's attention, so its FFN, the final norm and the output projection see only those rows,
// and their logits are the all-positions run's last rows. The matrices' products are per row,
// so the values agree to rounding (the batch size may choose another product kernel).
TEST_P(DecoderVariant, LastPositionsOnlyGiveTheLastRowsOfAll) {
    DecoderParams p = params();
    p.n_kv = 12;
    auto all = make_instance(p, 7, kTokens, arch());
    const std::vector<float> every = compute_logits(*all);
    EXPECT_EQ(all->model.out_ids, nullptr);
    for (const int n : {1, 3}) {
        DecoderParams q = p;
        q.n_outputs = n;
        auto some = make_instance(q, 7, kTokens, arch());
        ASSERT_NE(some->model.out_ids, nullptr);
        EXPECT_EQ(some->model.out_ids->name, "inp_out_ids");
        EXPECT_EQ(some->model.logits->ne[1], n);
        const std::vector<float> want(every.end() - static_cast<std::ptrdiff_t>(n) * p.n_vocab, every.end());
        EXPECT_LT(nmse(compute_logits(*some), want), 1e-12) << n << " outputs";
        // Fewer rows through the last FFN and the output projection.
        EXPECT_LT(q.matmul_flops(), p.matmul_flops());
    }
}

// LFM2's hybrid layers, small: short convolutions of 3 inputs (layers 0 and 2) around an
// attention layer.
// A hybrid of 3 layers, the middle one attention: LFM2's short convolutions, or Granite 4.0-H's
// Mamba-2 (2 groups of 2 heads of 16; no rope; Granite's multipliers; experts and a shared expert).
struct Hybrid {
    const char* name;
    DecoderParams params;
};

DecoderParams hybrid_params() {
    DecoderParams p = small_params();
    p.n_layers = 3;
    p.recurrent = {true, false, true};
    p.conv_kernel = 3;
    return p;
}

DecoderParams granite_params() {
    DecoderParams p = hybrid_params();
    p.conv_kernel = 4;
    p.ssm = {.d_inner = 64, .d_state = 8, .n_head = 4, .n_group = 2};
    p.rope = false;
    p.embd_scale = 3.0f;
    p.kq_scale = 0.3f;
    p.residual_scale = 0.7f;
    p.logit_scale = 2.0f;
    p.experts = {.n_expert = 4, .n_used = 2, .n_ff = 16, .normalize = true, .n_shared = 1, .n_ff_shared = 24};
    return p;
}

void PrintTo(const Hybrid& h, std::ostream* os) { *os << h.name; }

// Qwen3.5: delta-net layers 0 and 2 (2 key heads and 4 value heads of 16), gated attention at 1.
DecoderParams qwen35_params() {
    DecoderParams p = hybrid_params();
    p.conv_kernel = 4;
    p.ssm = {.d_inner = 64, .d_state = 16, .n_head = 4, .n_group = 2, .kind = SsmKind::GatedDeltaNet};
    p.n_embd_head = 16;
    p.rope_n_dims = 4;
    return p;
}

// Qwen3-Next: qwen35's layers with value heads grouped by key head, experts beside a gated shared one.
DecoderParams qwen3next_params() {
    DecoderParams p = qwen35_params();
    p.ssm.grouped_heads = true;
    p.experts = {.n_expert = 4, .n_used = 2, .n_ff = 16, .gating = ExpertGating::Softmax, .normalize = true, .n_shared = 1, .n_ff_shared = 24,
                 .shared_gate = true};
    return p;
}

// Nemotron-H: Mamba-2 at 0 and 3, a relu² FFN alone at 1 and 4, attention at 2.
DecoderParams nemotron_h_params() {
    DecoderParams p = small_params();
    p.n_layers = 5;
    p.recurrent = {true, false, false, true, false};
    p.layer_n_ff = {0, 24, 0, 0, 24};
    p.n_ff = 24;
    p.conv_kernel = 4;
    p.ssm = {.d_inner = 64, .d_state = 8, .n_head = 4, .n_group = 2};
    p.rope = false;
    return p;
}

// Nemotron-H MoE: the FFN layers ungated relu² experts, sigmoid-routed with a selection bias.
DecoderParams nemotron_h_moe_params() {
    DecoderParams p = nemotron_h_params();
    p.experts = {.n_expert = 4, .n_used = 2, .n_ff = 24, .gating = ExpertGating::Sigmoid, .normalize = true, .weights_scale = 2.0f,
                 .selection_bias = true, .n_shared = 1, .n_ff_shared = 16, .ungated = true};
    return p;
}

// LFM2-MoE: LFM2's layers, the first with a dense FFN, the others sigmoid-routed SwiGLU experts
// chosen with a selection bias, normalised.
DecoderParams lfm2moe_params() {
    DecoderParams p = hybrid_params();
    p.n_dense_lead = 1;
    p.experts = {.n_expert = 4, .n_used = 2, .n_ff = 16, .gating = ExpertGating::Sigmoid, .normalize = true, .selection_bias = true};
    return p;
}

const Hybrid kHybrids[] = {{"lfm2", hybrid_params()},           {"lfm2moe", lfm2moe_params()},
                           {"granitehybrid", granite_params()}, {"qwen35", qwen35_params()},
                           {"qwen3next", qwen3next_params()},   {"nemotron_h", nemotron_h_params()},
                           {"nemotron_h_moe", nemotron_h_moe_params()}};

class DecoderHybrid : public ::testing::TestWithParam<Hybrid> {
protected:
    const Architecture& arch() const { return *find_architecture(GetParam().name); }
    std::unique_ptr<Instance> instance(const DecoderParams& p, uint32_t seed, const std::vector<int32_t>& tokens) const {
        return make_instance(p, seed, tokens, arch());
    }
};

// Prefill 6 tokens, then decode the 7th over the KV cache and the recurrent states that prefill
// left: its logits are the 7-token prefill's last row, so each state was written at the end of one
// batch and read at the start of the next. (Every cache holds 7 cells; the prefill's last is masked.
// The states start from the same random values in both runs.)
TEST_P(DecoderHybrid, DecodeStepCarriesTheRecurrentStates) {
    DecoderParams p = GetParam().params;
    p.n_kv = p.kv_cells = 7;
    auto full = instance(p, 9, kTokens);
    const std::vector<float> all = compute_logits(*full);
    DecoderParams first = p;
    first.n_tokens = first.n_kv = 6;
    auto prefill = instance(first, 9, {kTokens.begin(), kTokens.end() - 1});
    compute_logits(*prefill);
    DecoderParams step = p;
    step.n_tokens = 1;
    auto decode = instance(step, 9, {kTokens.back()});
    const auto layers = static_cast<size_t>(p.n_layers);
    ASSERT_EQ(decode->model.conv_state.size(), layers);
    EXPECT_EQ(decode->model.conv_state[1], nullptr);
    EXPECT_EQ(decode->model.k_cache[0], nullptr);
    EXPECT_EQ(decode->model.ssm_state.size(), p.ssm.enabled() ? layers : 0u);
    for (auto caches : {&Decoder::k_cache, &Decoder::v_cache, &Decoder::conv_state, &Decoder::ssm_state}) {
        for (size_t il = 0; il < (prefill->model.*caches).size(); ++il) {
            Tensor* from = (prefill->model.*caches)[il];
            if (from != nullptr) {
                ASSERT_TRUE(tensor_copy(*from, *(decode->model.*caches)[il]).is_ok());
            }
        }
    }
    const std::vector<float> want(all.end() - p.n_vocab, all.end());
    EXPECT_LT(nmse(compute_logits(*decode), want), 1e-10);
    // Each state matters: the step over emptied ones computes other logits.
    for (auto states : {&Decoder::conv_state, &Decoder::ssm_state}) {
        if ((decode->model.*states).empty()) continue;
        auto emptied = instance(step, 9, {kTokens.back()});
        for (auto caches : {&Decoder::k_cache, &Decoder::v_cache, &Decoder::conv_state, &Decoder::ssm_state}) {
            for (size_t il = 0; il < (prefill->model.*caches).size(); ++il) {
                Tensor* from = (prefill->model.*caches)[il];
                if (from == nullptr) continue;
                Tensor& to = *(emptied->model.*caches)[il];
                ASSERT_TRUE((caches == states ? tensor_memset(to, 0, 0, to.nbytes()) : tensor_copy(*from, to)).is_ok());
            }
        }
        EXPECT_GT(nmse(compute_logits(*emptied), want), 1e-6) << (states == &Decoder::conv_state ? "conv_state" : "ssm_state");
    }
}

// Flash and softmax attention agree on the hybrid's attention layer; logits of the last rows only
// are the all-rows run's last rows (the recurrent layers' rows shrink after the last layer as the
// others').
TEST_P(DecoderHybrid, AttentionPathsAgreeAndLastRowsOnly) {
    DecoderParams p = GetParam().params;
    p.n_kv = 12;
    const std::vector<float> every = compute_logits(*instance(p, 4, kTokens));
    p.flash_attn = false;
    EXPECT_LT(nmse(compute_logits(*instance(p, 4, kTokens)), every), 1e-10);
    p.n_outputs = 2;
    const std::vector<float> want(every.end() - 2 * p.n_vocab, every.end());
    EXPECT_LT(nmse(compute_logits(*instance(p, 4, kTokens)), want), 1e-12);
}

INSTANTIATE_TEST_SUITE_P(Architectures, DecoderHybrid, ::testing::ValuesIn(kHybrids),
                         [](const ::testing::TestParamInfo<Hybrid>& info) { return std::string(info.param.name); });

TEST(Decoder, OutputsBeyondTheBatchAreRefused) {
    DecoderParams p = small_params();
    p.n_outputs = p.n_tokens + 1;
    Context ctx;
    const auto m = build_decoder(ctx, p);
    ASSERT_FALSE(m.is_ok());
    EXPECT_NE(m.status().message().find("n_outputs"), std::string::npos) << m.status().message();
}

INSTANTIATE_TEST_SUITE_P(Architectures, DecoderVariant, ::testing::ValuesIn(kVariants),
                         [](const ::testing::TestParamInfo<Variant>& info) {
                             std::string name = info.param.name;
                             for (char& c : name) c = c == '-' ? '_' : c;
                             return name;
                         });

// llama.cpp's sliding window: key j is hidden from the query at position i when i - j >= window
// (and, causally, when j > i). The batch is the cache's last n_tokens positions.
TEST(Decoder, SlidingWindowMaskHidesKeysWindowOrMoreBehind) {
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> m = causal_mask_values(6, 3, 2);  // queries at positions 3, 4, 5
    const std::vector<float> want = {-inf, -inf, 0, 0, -inf, -inf,   //
                                     -inf, -inf, -inf, 0, 0, -inf,   //
                                     -inf, -inf, -inf, -inf, 0, 0};
    EXPECT_EQ(m, want);
    EXPECT_EQ(causal_mask_values(6, 3, 0), causal_mask_values(6, 3, 100));  // a window past the cache: causal only
}

TEST(Decoder, SlidingLayerPatternsAreLlamaCpps) {
    SlidingWindow gemma2{.window = 4096, .pattern = 2};
    EXPECT_TRUE(gemma2.slides(0));
    EXPECT_FALSE(gemma2.slides(1));
    EXPECT_TRUE(gemma2.slides(2));
    SlidingWindow gemma3{.window = 1024, .pattern = 6};
    for (int il = 0; il < 12; ++il) EXPECT_EQ(gemma3.slides(il), il % 6 < 5) << il;
    SlidingWindow none{.window = 0, .pattern = 2};
    EXPECT_FALSE(none.slides(0));
    SlidingWindow every{.window = 8, .pattern = 0};
    EXPECT_TRUE(every.slides(3));
}

TEST(Decoder, BadParametersAreErrors) {
    Context ctx;
    DecoderParams p = small_params();
    p.n_head = 5;
    EXPECT_EQ(build_decoder(ctx, p).status().code(), StatusCode::InvalidArgument);
    p = small_params();
    p.n_kv = 3;  // smaller than the batch
    EXPECT_EQ(build_decoder(ctx, p).status().code(), StatusCode::InvalidArgument);
    p = small_params();
    p.experts = {.n_expert = 4, .n_used = 5, .n_ff = 8};  // more used than there are
    EXPECT_EQ(build_decoder(ctx, p).status().code(), StatusCode::InvalidArgument);
    p.experts = {.n_expert = 8, .n_used = 2, .n_ff = 8, .n_group = 3, .n_group_used = 1};  // 3 groups do not divide 8
    EXPECT_EQ(build_decoder(ctx, p).status().code(), StatusCode::InvalidArgument);
    p.experts = {.n_expert = 8, .n_used = 6, .n_ff = 8, .n_group = 4, .n_group_used = 2};  // 2 groups of 2 hold 4, not 6
    EXPECT_EQ(build_decoder(ctx, p).status().code(), StatusCode::InvalidArgument);
}

}  // namespace
}  // namespace xb
