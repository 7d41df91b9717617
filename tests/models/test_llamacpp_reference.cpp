// xbackend's logits on the model fixtures against llama.cpp's own logits of the same files: a second
// reference, independent of the float64 numpy forward passes that ModelReference
// (test_gguf_model.cpp) checks against. scripts/llamacpp-reference ran llama.cpp (one llama_decode
// of the manifest's seven tokens at positions 0..6, every position's logits, flash attention off,
// f32 K and V cache, one thread, CPU) and wrote <model>.llamacpp.logits.npy and each model's
// "llamacpp" entry in the manifests; this test needs only those files. It is the case n_kv = n_tokens
// with every layer: llama.cpp's cache never holds the zero entries of the longer-cache references,
// and llama.cpp cannot stop after the first layer.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "formats/npy.hpp"
#include "report/metrics.hpp"
#include "model_fixtures.hpp"
#include "test_config_util.hpp"

namespace xb::config {
namespace {

using testing::data_path;
using testing::model_path;
using testing::npy_values;
using testing::read_manifest;


std::string testing_format(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", v);
    return buf;
}

double nmse(const std::vector<float>& got, const std::vector<float>& want) { return report::compare(got, want).nmse; }

// NMSE bounds of xbackend's logits against llama.cpp's, by how the file stores its matrices. Both
// compute in float32 on the values the file holds; the differences are llama.cpp's roundings, which
// xbackend's CPU path does not make (measured per model: docs/models.md, tests/data/models/arch/README.md).
//   f32    where llama.cpp rounds nothing, 4.4e-14 .. 1.1e-13 (float32 sums in another order); GELU
//          goes through ggml's f16 table (gemma2: 2.8e-8). Bound 1e-6, 35x the largest.
//   f16    llama.cpp's CPU rounds the activations to f16 before every f16 product (ggml's
//          vec_dot_type; xbackend keeps them f32): 2.2e-7 .. 8.4e-7. Bound 1e-5, 12x the largest.
//   quant  both round the activations to 8 bits before quantized products, in the same blocks (q8_K
//          for the 256-value formats, q8_0 / q8_1 with f16 scales for the others) with the same
//          rounding: the dense models give the same numbers, 7e-15 .. 3.5e-14 (the Q2_K, Q3_K_M,
//          IQ4_XS and IQ mixes, tiny-llama-quant with every legacy type). The two MoE models with
//          quantized experts differ more, 1.4e-5 (qwen3moe's q8_0) and 5.8e-5 (gpt-oss's MXFP4),
//          against 2.7e-7 and 5.2e-7 for their f16 twins: not explained yet. Bound 2.5e-4, 4x the
//          largest, still 1e4 below the shifted-logits distance (about 2).
double llamacpp_bound(const std::string& weights) {
    if (weights == "f32") return 1e-6;
    if (weights == "f16") return 1e-5;
    return 2.5e-4;
}

struct LlamacppLogits {
    std::string model;    // the .gguf file, relative to tests/data/models/
    std::string weights;  // f32, f16 or quant (the manifest's "weights")
    std::string logits;   // llama.cpp's logits, float32 (tokens, vocab)
    bool long_factors = false;  // llama.cpp ran Phi-3's rope_factors_long (its padded context > original)
};

void PrintTo(const LlamacppLogits& r, std::ostream* os) { *os << r.logits; }

std::vector<LlamacppLogits> llamacpp_references() {
    std::vector<LlamacppLogits> out;
    for (const std::string dir : {"", "arch/"}) {
        const nlohmann::json manifest = read_manifest(dir);  // alive for the loop (items() is a view)
        for (const auto& [name, m] : manifest.at("models").items()) {
            if (!m.contains("llamacpp") || !m.at("llamacpp").value("loads", false)) continue;
            const auto& l = m.at("llamacpp");
            out.push_back({dir + m.at("file").get<std::string>(), m.at("weights").get<std::string>(),
                           dir + l.at("logits").get<std::string>(), l.value("rope_factors", "") == "long"});
        }
    }
    return out;
}

// The model config of ModelReference's all-layers, n_kv = n_tokens case; with `long_factors`, the
// short rope factors replaced by the file's long ones (what llama.cpp ran).
std::string config_for(const LlamacppLogits& r, bool flash_attn, bool long_factors) {
    const nlohmann::json tokens = read_manifest("").at("tokens");
    nlohmann::json config = {{"graph",
                              {{"model", "gguf"},
                               {"file", r.model},
                               {"params", {{"tokens", tokens}, {"n_kv", tokens.size()}, {"flash_attn", flash_attn}}}}}};
    if (long_factors) {
        config["tensors"] = {{"rope_factors_short.weight",
                              {{"init", {{"kind", "gguf"}, {"file", r.model}, {"tensor", "rope_factors_long.weight"}}}}}};
    }
    return config.dump();
}

std::vector<float> cpu_logits(const std::string& config_text) {
    auto spec = parse_config(config_text, "test.json", model_path(""));
    EXPECT_TRUE(spec.is_ok()) << spec.status().to_string();
    if (!spec.is_ok()) return {};
    auto model = build_model(*spec, global_registry(), {});
    EXPECT_TRUE(model.is_ok()) << model.status().to_string();
    if (!model.is_ok()) return {};
    auto placed = testing::compute_alone(std::move(model).value());
    EXPECT_TRUE(placed.is_ok()) << placed.status().to_string();
    if (!placed.is_ok()) return {};
    const Tensor* logits = (*placed)->model.find("result_output");
    EXPECT_NE(logits, nullptr);
    if (logits == nullptr) return {};
    return tensor_get_f32(*logits).value();
}

TEST(LlamacppReferenceFiles, EveryFixtureHasOne) {
    // llama.cpp loads and runs every fixture model (scripts/llamacpp-reference records the ones it
    // cannot); a fixture without llama.cpp's logits is either new (run the script) or changed.
    size_t models = 0;
    for (const std::string dir : {"", "arch/"}) models += read_manifest(dir).at("models").size();
    EXPECT_EQ(llamacpp_references().size(), models);
}

class LlamacppReference : public ::testing::TestWithParam<LlamacppLogits> {};

TEST_P(LlamacppReference, LogitsMatchLlamaCpp) {
    const LlamacppLogits& r = GetParam();
    const std::vector<float> want = npy_values(r.logits);
    ASSERT_FALSE(want.empty());
    const double bound = llamacpp_bound(r.weights);
    // Both attention paths, as ModelReference; llama.cpp ran mul_mat + soft_max (flash attention off).
    for (const bool flash : {false, true}) {
        SCOPED_TRACE(flash ? "flash_attn_ext" : "mul_mat + soft_max_ext");
        const std::vector<float> got = cpu_logits(config_for(r, flash, r.long_factors));
        ASSERT_EQ(got.size(), want.size()) << "llama.cpp's (tokens, vocab) is xbackend's [vocab, tokens]";
        const double e = nmse(got, want);
        RecordProperty(flash ? "nmse_flash" : "nmse", testing_format(e));
        EXPECT_LT(e, bound) << r.logits;
        // The bound catches a real mistake: the logits of the neighbouring tokens are far off.
        const size_t vocab = want.size() / 7;
        std::vector<float> shifted(want.begin() + static_cast<std::ptrdiff_t>(vocab), want.end());
        shifted.insert(shifted.end(), want.begin(), want.begin() + static_cast<std::ptrdiff_t>(vocab));
        EXPECT_GT(nmse(got, shifted), 100 * bound);
    }
    if (r.long_factors) {
        // And a subtle one: the short factors, which xbackend chooses at this n_kv (its context is the
        // cache, 7, not beyond the original context 8), give a different model from llama.cpp's run.
        const std::vector<float> short_factors = cpu_logits(config_for(r, false, false));
        EXPECT_GT(nmse(short_factors, want), 100 * bound);
    }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, LlamacppReference, ::testing::ValuesIn(llamacpp_references()),
                         [](const ::testing::TestParamInfo<LlamacppLogits>& info) {
                             std::string name = info.param.logits.substr(0, info.param.logits.size() - 4);
                             for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                             return name;
                         });

// kv_cells pads the cache as llama.cpp does: the same attention over more, masked cells. The logits
// stay the model's (to the f32 rounding of longer soft_max rows), the mask and the cache views grow,
// and a kv_cells that cannot hold the positions is a config error naming the key.
TEST(KvCells, PaddedCacheComputesTheSameModel) {
    const LlamacppLogits r = llamacpp_references().front();
    const std::vector<float> plain = cpu_logits(config_for(r, false, r.long_factors));
    nlohmann::json padded = nlohmann::json::parse(config_for(r, false, r.long_factors));
    padded["graph"]["params"]["kv_cells"] = 64;
    const std::vector<float> got = cpu_logits(padded.dump());
    ASSERT_EQ(got.size(), plain.size());
    EXPECT_LT(nmse(got, plain), 1e-10);

    auto spec = parse_config(padded.dump(), "test.json", model_path(""));
    ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
    auto model = build_model(*spec, global_registry(), {});
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    const Tensor* mask = model->find("kq_mask");
    ASSERT_NE(mask, nullptr);
    EXPECT_EQ(mask->ne[0], 64) << "the mask covers every cell";

    padded["graph"]["params"]["kv_cells"] = 3;
    auto bad = parse_config(padded.dump(), "test.json", model_path(""));
    ASSERT_FALSE(bad.is_ok());
    EXPECT_NE(bad.status().message().find("/graph/params/kv_cells"), std::string::npos) << bad.status().to_string();
}

}  // namespace
}  // namespace xb::config
