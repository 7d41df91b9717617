// The gguf model builder on llama.cpp-layout files written by scripts/model_fixtures.py with the
// `gguf` package: logits against the float64 reference of the same weights (llama with GQA and
// normal rope on permuted Q/K, tied and untied output, linear rope scaling; qwen2 with biases and
// neox rope; f32, f16 and every quantized type), the first-N-layers option, a cache longer than
// the batch, node and weight names, placement by layer and pattern, and one clear error for each
// kind of bad file.
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <utility>

#include "formats/npy.hpp"
#include "report/metrics.hpp"
#include "model_fixtures.hpp"
#include "patched_gguf.hpp"
#include "models/model_text.hpp"
#include "test_config_util.hpp"

namespace xb::config {
namespace {

using testing::data_path;
using testing::model_path;
using testing::npy_values;
using testing::PatchedGguf;
using testing::read_manifest;

// scripts/model_fixtures.py's llama and qwen2 models (and the bad files).
const nlohmann::json& manifest() {
    static const nlohmann::json m = read_manifest("");
    return m;
}
// scripts/arch_fixtures.py's models of the other architectures, in models/arch/.
const nlohmann::json& arch_manifest() {
    static const nlohmann::json m = read_manifest("arch/");
    return m;
}

// A config running `file` on `backends` with the manifest's tokens.
std::string model_config(const std::string& file, int n_kv, int n_layers, bool flash_attn = true) {
    nlohmann::json params = {{"tokens", manifest().at("tokens")}, {"n_kv", n_kv}, {"flash_attn", flash_attn}};
    if (n_layers > 0) params["n_layers"] = n_layers;
    return R"({"graph": {"model": "gguf", "file": ")" + file + R"(", "params": )" + params.dump() + "}}";
}

Result<Model> build(const std::string& config_text, const BuildOptions& options = {}) {
    XB_ASSIGN_OR_RETURN(ConfigSpec spec, parse_config(config_text, "test.json", model_path("")));
    return build_model(spec, global_registry(), options);
}

// Normalised mean squared error of `got` against `want`.
double nmse(const std::vector<float>& got, const std::vector<float>& want) { return report::compare(got, want).nmse; }

// NMSE bounds of the logits against the float64 reference, by how the file stores its matrices.
// f32 and f16: float32 arithmetic on the stored values (measured 3e-14 to 8e-14). Quantized: the
// CPU quantizes each product's activations to 8 bits as ggml does (measured 2.2e-4 for one layer,
// 3.1e-4 for two); the BLAS backend, which dequantizes the weights and keeps f32 activations, is
// held to the f32 bound below.
double logits_bound(const std::string& weights) { return weights == "quant" ? 2e-3 : 1e-9; }

// The logits of a model config computed on `backends` through the scheduler.
std::vector<float> scheduled_logits(const std::string& config, const std::vector<std::string>& backends) {
    BuildOptions options;
    options.backends = backends;
    auto model = build(config, options);
    EXPECT_TRUE(model.is_ok()) << model.status().to_string();
    if (!model.is_ok()) return {};
    auto placed = testing::compute_scheduled(std::move(model).value());
    EXPECT_TRUE(placed.is_ok()) << placed.status().to_string();
    if (!placed.is_ok()) return {};
    return tensor_get_f32(*(*placed)->model.find("result_output")).value();
}

struct Reference {
    std::string model;
    std::string weights;
    int n_layers;
    int n_kv;
    std::string logits;
};

void PrintTo(const Reference& r, std::ostream* os) { *os << r.logits; }

std::vector<Reference> references() {
    std::vector<Reference> out;
    for (const auto& [dir, fixtures] : {std::pair{std::string(), &manifest()}, std::pair{std::string("arch/"), &arch_manifest()}}) {
        EXPECT_EQ(fixtures->at("tokens"), manifest().at("tokens")) << "one batch of tokens for every fixture";
        for (const auto& [name, m] : fixtures->at("models").items()) {
            for (const auto& r : m.at("references")) {
                out.push_back({dir + m.at("file").get<std::string>(), m.at("weights").get<std::string>(),
                               r.at("n_layers").get<int>(), r.at("n_kv").get<int>(), dir + r.at("logits").get<std::string>()});
            }
        }
    }
    return out;
}

class ModelReference : public ::testing::TestWithParam<Reference> {};

TEST_P(ModelReference, LogitsMatchTheFloat64ForwardPass) {
    const Reference& r = GetParam();
    // Both attention paths: flash_attn_ext (soft-capping and sinks inside it) and mul_mat +
    // soft_max_ext (soft-capping as its own nodes, sinks in the soft_max).
    for (const bool flash : {true, false}) {
        SCOPED_TRACE(flash ? "flash_attn_ext" : "mul_mat + soft_max_ext");
        auto model = build(model_config(r.model, r.n_kv, r.n_layers, flash));
        ASSERT_TRUE(model.is_ok()) << model.status().to_string();
        auto placed = testing::compute_alone(std::move(model).value());
        ASSERT_TRUE(placed.is_ok()) << placed.status().to_string();
        const Tensor* logits = (*placed)->model.find("result_output");
        ASSERT_NE(logits, nullptr);
        auto got = tensor_get_f32(*logits);
        ASSERT_TRUE(got.is_ok());
        auto want = read_npy(model_path(r.logits));
        ASSERT_TRUE(want.is_ok()) << want.status().to_string();
        ASSERT_EQ(want->ne().value(), logits->ne) << "numpy (tokens, vocab) is ggml [vocab, tokens]";
        const std::vector<float> ref = npy_values(r.logits);
        const double e = nmse(*got, ref);
        EXPECT_LT(e, logits_bound(r.weights)) << r.logits;
        // The bound must be tight enough to catch a layout mistake: logits of other tokens are far off.
        std::vector<float> shifted(ref.begin() + logits->ne[0], ref.end());
        shifted.insert(shifted.end(), ref.begin(), ref.begin() + logits->ne[0]);
        EXPECT_GT(nmse(*got, shifted), 100 * logits_bound(r.weights));
    }
}

// The F64 device computes the same graphs exactly: its logits are the float64 forward pass's, for
// every storage type (it dequantizes in double and never rounds activations), to the f32 rounding
// of reading them back.
TEST_P(ModelReference, LogitsOnF64MatchTheFloat64ForwardPassExactly) {
    const Reference& r = GetParam();
    for (const bool flash : {true, false}) {
        SCOPED_TRACE(flash ? "flash_attn_ext" : "mul_mat + soft_max_ext");
        BuildOptions options;
        options.backends = {"F64"};
        auto model = build(model_config(r.model, r.n_kv, r.n_layers, flash), options);
        ASSERT_TRUE(model.is_ok()) << model.status().to_string();
        auto placed = testing::compute_alone(std::move(model).value());
        ASSERT_TRUE(placed.is_ok()) << placed.status().to_string();
        auto got = tensor_get_f32(*(*placed)->model.find("result_output"));
        ASSERT_TRUE(got.is_ok()) << got.status().to_string();
        EXPECT_LT(nmse(*got, npy_values(r.logits)), 1e-12) << r.logits;
    }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ModelReference, ::testing::ValuesIn(references()),
                         [](const ::testing::TestParamInfo<Reference>& info) {
                             std::string name = info.param.logits.substr(0, info.param.logits.size() - 4);
                             for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                             return name;
                         });

// The quantized model's weights are read exactly: BLAS (dequantized weights, f32 activations) meets
// the f32 bound, so the CPU's larger error is its 8-bit activations alone.
TEST(GgufModel, QuantizedWeightsAreExactOnBlas) {
    if (global_registry().dev_by_name("BLAS") == nullptr) GTEST_SKIP() << "built without BLAS";
    const std::vector<float> blas = scheduled_logits(model_config("tiny-llama-quant.gguf", 7, 0), {"BLAS", "CPU"});
    ASSERT_FALSE(blas.empty());
    EXPECT_LT(nmse(blas, npy_values("tiny-llama-quant.logits.npy")), logits_bound("f32"));
}

// Llama 3.1's rope_freqs.weight reaches every layer's rope: without it (factors 1) the logits are
// far from the reference that uses it.
TEST(GgufModel, RopeFrequencyFactorsAreApplied) {
    const std::string with = model_config("tiny-llama3.gguf", 16, 0);
    const std::string without = with.substr(0, with.size() - 1) + R"(, "tensors": {"rope_freqs.weight": {"init": 1}}})";
    const std::vector<float> a = scheduled_logits(with, {"CPU"});
    const std::vector<float> b = scheduled_logits(without, {"CPU"});
    ASSERT_FALSE(a.empty() || b.empty());
    EXPECT_GT(nmse(b, a), 1e-4) << "rope_freqs.weight made no difference";
}

TEST(GgufModel, EveryFixtureHasAReference) {
    EXPECT_EQ(manifest().at("models").size(), 10u);
    EXPECT_EQ(arch_manifest().at("models").size(), 21u);
    EXPECT_GE(references().size(), 50u);
}

TEST(GgufModel, NamesWeightsAndNodesAsLlamaCpp) {
    auto model = build(model_config("tiny-qwen2.gguf", 7, 0));
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    for (const char* w : {"token_embd.weight", "blk.1.attn_q.bias", "blk.0.ffn_down.weight", "output_norm.weight"}) {
        EXPECT_NE(model->find(w), nullptr) << w;
    }
    EXPECT_EQ(model->find("output.weight"), nullptr) << "tiny-qwen2 ties its output to token_embd";
    std::set<std::string> names;
    for (const Tensor* n : model->graph.nodes()) {
        EXPECT_FALSE(n->name.empty()) << op_name(n->op) << " node without a name";
        EXPECT_TRUE(names.insert(n->name).second) << "two nodes named " << n->name;
    }
    for (const char* n : {"inp_embd", "attn_norm-0", "Qcur-0", "Kcur-1", "Vcur-0", "kqv_out-1", "attn_out-0", "ffn_inp-0",
                          "ffn_norm-1", "ffn_out-0", "l_out-1", "result_norm", "result_output"}) {
        EXPECT_TRUE(names.count(n)) << "no node " << n;
    }
}

TEST(GgufModel, ReadsHyperparametersFromTheMetadata) {
    auto file = GgufReader::open(model_path("tiny-llama-tied.gguf"));
    ASSERT_TRUE(file.is_ok());
    auto info = read_gguf_model_info(*file);
    ASSERT_TRUE(info.is_ok()) << info.status().to_string();
    EXPECT_EQ(info->architecture, "llama");
    EXPECT_EQ(info->params.n_layers, 2);
    EXPECT_EQ(info->params.n_embd, 64);
    EXPECT_EQ(info->params.n_ff, 96);
    EXPECT_EQ(info->params.n_head, 4);
    EXPECT_EQ(info->params.n_vocab, 256);
    EXPECT_EQ(info->params.rope_mode, RopeMode::Normal);
    EXPECT_FLOAT_EQ(info->params.rope_freq_scale, 0.5f);  // linear scaling x2
    EXPECT_FLOAT_EQ(info->params.rms_eps, 1e-6f);
    EXPECT_TRUE(info->params.tied_output);
    EXPECT_FALSE(summarize_layers(*file, *info).qkv_bias);
    auto qwen = GgufReader::open(model_path("tiny-qwen2.gguf"));
    ASSERT_TRUE(qwen.is_ok());
    auto qinfo = read_gguf_model_info(*qwen);
    ASSERT_TRUE(qinfo.is_ok());
    EXPECT_EQ(qinfo->params.rope_mode, RopeMode::Neox);
    EXPECT_TRUE(summarize_layers(*qwen, *qinfo).qkv_bias);
    EXPECT_EQ(qinfo->params.n_head_kv, 2);
}

TEST(GgufModel, FirstLayersOnlyAndDefaultTokens) {
    auto spec = parse_config(R"({"graph": {"model": "gguf", "file": "tiny-llama.gguf", "params": {"n_layers": 1}}})", "t.json",
                             model_path(""));
    ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
    auto model = build_model(*spec, global_registry());
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    EXPECT_NE(model->find("blk.0.attn_q.weight"), nullptr);
    EXPECT_EQ(model->find("blk.1.attn_q.weight"), nullptr);
    EXPECT_EQ(model->n_tokens, 8);  // the default batch
    auto placed = testing::compute_alone(std::move(model).value());
    ASSERT_TRUE(placed.is_ok()) << placed.status().to_string();
    testing::expect_finite_outputs((*placed)->model);
    // The default tokens are valid ids, the same for the same seed.
    auto tokens = tensor_get_f32(*(*placed)->model.find("tokens"));
    ASSERT_TRUE(tokens.is_ok());
    for (float t : *tokens) EXPECT_TRUE(t >= 0 && t < 256) << t;
}

TEST(GgufModel, AModelFileIsAConfig) {
    auto spec = load_config(model_path("tiny-llama.gguf"));
    ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
    EXPECT_EQ(spec->name, "tiny-llama");
    ASSERT_TRUE(spec->model.has_value());
    EXPECT_EQ(spec->model->kind, ModelKind::Gguf);
    EXPECT_TRUE(build_model(*spec, global_registry()).is_ok());
}

TEST(GgufModel, PlacementWorksUnchanged) {
    auto spec = parse_config(R"({"graph": {"model": "gguf", "file": "tiny-llama.gguf", "params": {"n_tokens": 4}},
        "placement": {"backends": ["SIM0", "CPU"], "offload_layers": 1,
                      "weights": [{"pattern": "blk.0.ffn_*", "device": "SIM0"}], "scheduler": {"n_copies": 2}}})",
                             "t.json", model_path(""));
    ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
    auto split = build_model(*spec, global_registry());
    ASSERT_TRUE(split.is_ok()) << split.status().to_string();
    const ModelPlacement& p = split->placement;
    EXPECT_EQ(p.device_of(*split->find("blk.1.attn_q.weight")), "SIM0");  // the last layer is offloaded
    EXPECT_EQ(p.device_of(*split->find("blk.0.attn_q.weight")), "CPU");
    EXPECT_EQ(p.device_of(*split->find("blk.0.ffn_up.weight")), "SIM0");  // by pattern
    EXPECT_EQ(p.device_of(*split->find("token_embd.weight")), "CPU");
    EXPECT_EQ(p.scheduler.n_copies, 2);
    auto placed = testing::compute_scheduled(std::move(split).value());
    ASSERT_TRUE(placed.is_ok()) << placed.status().to_string();
    BuildOptions cpu_only;
    cpu_only.backends = {"CPU"};
    auto whole = build_model(*spec, global_registry(), cpu_only);
    ASSERT_TRUE(whole.is_ok());
    auto cpu = testing::compute_alone(std::move(whole).value());
    ASSERT_TRUE(cpu.is_ok()) << cpu.status().to_string();
    auto a = tensor_get_f32(*(*placed)->model.find("result_output")).value();
    auto b = tensor_get_f32(*(*cpu)->model.find("result_output")).value();
    EXPECT_LT(nmse(a, b), 1e-12);
}

// `from` copied to a temporary file with metadata `key` set to `value`.
// A copy of fixture `from` in the temporary folder as xb-<name>.gguf: its metadata but `drop_key`,
// then `set` (a key and its value) when given; its tensors but `drop_tensor`.
std::string copy_fixture(const std::string& from, const std::string& name, const std::string& drop_key, const std::string& drop_tensor,
                         std::optional<std::pair<std::string, GgufValue>> set = std::nullopt) {
    auto in = GgufReader::open(model_path(from));
    EXPECT_TRUE(in.is_ok()) << in.status().to_string();
    GgufWriter w;
    for (const GgufKV& kv : in->kvs()) {
        if (kv.key != drop_key) w.set_kv(kv.key, kv.value);
    }
    if (set) w.set_kv(set->first, std::move(set->second));
    for (const GgufTensorInfo& t : in->tensors()) {
        if (t.name == drop_tensor) continue;
        auto data = in->read_data(t);
        EXPECT_TRUE(data.is_ok());
        EXPECT_TRUE(w.add_tensor(t.name, *ggml_type_info(t.type)->dtype, t.ne, std::move(data).value()).is_ok()) << t.name;
    }
    const std::string path = (std::filesystem::temp_directory_path() / ("xb-" + name + ".gguf")).string();
    EXPECT_TRUE(w.write(path).is_ok());
    return path;
}

std::string with_metadata(const std::string& from, const std::string& key, GgufValue value, const std::string& name) {
    return copy_fixture(from, name, "", "", std::make_pair(key, std::move(value)));
}

GgufValue bools(std::initializer_list<bool> flags) {
    std::vector<GgufValue> items;
    for (bool f : flags) items.push_back(GgufValue::boolean(f));
    return GgufValue::array(GgufValueType::Bool, std::move(items));
}

// The model info a file's metadata gives (the file must open).
Result<GgufModelInfo> info_of(const std::string& path) {
    auto file = GgufReader::open(path);
    EXPECT_TRUE(file.is_ok()) << file.status().to_string();
    return read_gguf_model_info(*file);
}

// The message building the file's model gives, or "built".
std::string build_message(const std::string& path) {
    auto model = build(model_config(path, 7, 0));
    return model.is_ok() ? std::string("built") : model.status().message();
}

// Newer converters write Gemma 3's sliding_window_pattern as one bool per layer (true: it slides),
// which llama.cpp reads: the array of the period rule computes the same logits as the number 6,
// another array other ones, and an array of the wrong length or type is one line at its offset.
TEST(GgufModel, SlidingWindowPatternMayBeOneBoolPerLayer) {
    const std::string key = "gemma3.attention.sliding_window_pattern";
    const auto logits = [](const std::string& file) { return scheduled_logits(model_config(file, 7, 0), {"CPU"}); };
    auto original = GgufReader::open(model_path("arch/tiny-gemma3.gguf"));
    ASSERT_TRUE(original.is_ok());
    auto info = read_gguf_model_info(*original);
    ASSERT_TRUE(info.is_ok());
    ASSERT_EQ(info->params.n_layers, 6);
    ASSERT_TRUE(info->params.swa.layers.empty());
    const std::vector<float> by_period = logits("arch/tiny-gemma3.gguf");

    const std::string same = with_metadata("arch/tiny-gemma3.gguf", key, bools({true, true, true, true, true, false}), "swa-same");
    auto same_info = info_of(same);
    ASSERT_TRUE(same_info.is_ok()) << same_info.status().to_string();
    EXPECT_EQ(same_info->params.swa.layers, (std::vector<bool>{true, true, true, true, true, false}));
    EXPECT_NE(window_text(same_info->params).find("5 of 6 layers, by the file's list"), std::string::npos)
        << window_text(same_info->params);
    EXPECT_EQ(logits(same), by_period);

    const std::string other = with_metadata("arch/tiny-gemma3.gguf", key, bools({false, true, false, true, false, true}), "swa-other");
    auto other_info = info_of(other);
    ASSERT_TRUE(other_info.is_ok()) << other_info.status().to_string();
    EXPECT_FALSE(other_info->params.swa.slides(0));
    EXPECT_TRUE(other_info->params.swa.slides(5));
    EXPECT_NE(logits(other), by_period);

    const std::string short_list = with_metadata("arch/tiny-gemma3.gguf", key, bools({true, false}), "swa-short");
    auto short_info = info_of(short_list);
    ASSERT_FALSE(short_info.is_ok());
    EXPECT_NE(short_info.status().message().find("metadata '" + key + "' has 2 values, expected one per layer (6)"), std::string::npos)
        << short_info.status().message();
    EXPECT_NE(short_info.status().message().find(": offset "), std::string::npos);

    const std::string numbers =
        with_metadata("arch/tiny-gemma3.gguf", key, GgufValue::array(GgufValueType::I32, {GgufValue::i32(1), GgufValue::i32(0)}), "swa-ints");
    auto numbers_info = info_of(numbers);
    ASSERT_FALSE(numbers_info.is_ok());
    EXPECT_NE(numbers_info.status().message().find("is an array of i32, expected one bool per layer"), std::string::npos)
        << numbers_info.status().message();
    for (const std::string& f : {same, other, short_list, numbers}) std::filesystem::remove(f);
}

TEST(GgufModel, ConfigMistakesAreClear) {
    auto error = [](const std::string& params) {
        auto spec = parse_config(R"({"graph": {"model": "gguf", "file": "tiny-llama.gguf", "params": )" + params + "}}", "t.json",
                                 model_path(""));
        if (!spec.is_ok()) return spec.status().message();
        auto model = build_model(*spec, global_registry());
        return model.is_ok() ? std::string("accepted") : model.status().message();
    };
    EXPECT_NE(error(R"({"n_layers": 3})").find("/graph/params: n_layers is 3 but"), std::string::npos) << error(R"({"n_layers": 3})");
    EXPECT_NE(error(R"({"tokens": [1, 256]})").find("token id 256 is outside the vocabulary"), std::string::npos);
    EXPECT_NE(error(R"({"tokens": [1, 2], "n_tokens": 3})").find("n_tokens is 3 but 2 tokens are given"), std::string::npos);
    EXPECT_NE(error(R"({"n_kv": 2, "n_tokens": 4})").find("n_kv (2) must be at least n_tokens (4)"), std::string::npos);
    EXPECT_NE(error(R"({"n_embd": 4})").find("unknown"), std::string::npos);
    auto no_file = parse_config(R"({"graph": {"model": "gguf"}})", "t.json", ".");
    ASSERT_FALSE(no_file.is_ok());
    EXPECT_NE(no_file.status().message().find("/graph: missing"), std::string::npos) << no_file.status().message();
}

// --- bad files (models/bad, written by the fixture script) -------------------------------------

struct BadFile {
    const char* name;
    std::vector<const char*> says;  // substrings of the one-line message
    const char* dir = "bad/";       // under models/: bad/ (model_fixtures.py) or arch/bad/ (arch_fixtures.py)
};

void PrintTo(const BadFile& c, std::ostream* os) { *os << c.name; }

const std::vector<BadFile> kBadFiles = {
    {"truncated", {"truncated.gguf: offset ", "truncated"}},
    {"bad-magic", {"bad-magic.gguf: ", "GGUF"}},
    {"bad-version", {"bad-version.gguf: ", "version 7"}},
    {"missing-tensor", {"missing-tensor.gguf: no tensor 'blk.0.ffn_up.weight', which a llama model needs"}},
    {"wrong-shape", {"wrong-shape.gguf: offset ", "tensor 'blk.0.attn_k.weight' has shape [8, 4]", "need [8, 8]"}},
    {"wrong-type", {"wrong-type.gguf: offset ", "tensor 'blk.0.attn_norm.weight' is f16; norm weights and biases must be f32"}},
    {"metadata-type", {"metadata-type.gguf: offset ", "metadata 'llama.block_count' is a string, expected an integer"}},
    {"heads-do-not-divide", {"heads-do-not-divide.gguf: offset ", "llama.attention.head_count_kv (3) does not divide llama.attention.head_count (2)"}},
    {"unsupported-arch", {"unsupported-arch.gguf: offset ", "architecture 'mamba' is not supported (supported: llama, qwen2, qwen3, qwen3moe, gemma2, gemma3, phi3, gpt-oss, deepseek2, lfm2, lfm2moe, granitehybrid, qwen35, qwen35moe, qwen3next, nemotron_h, nemotron_h_moe)"}},
    {"extra-tensor", {"offset ", "tensor 'blk.0.attn_output.bias' has no role in xbackend's llama graph"}},
    {"moe-missing-expert", {"moe-missing-expert.gguf: no tensor 'blk.0.ffn_up_exps.weight', which a qwen3moe model needs"}, "arch/bad/"},
    {"moe-used-above-count", {"moe-used-above-count.gguf: offset ", "metadata 'qwen3moe.expert_used_count' is 5, expected 1 to 4"}, "arch/bad/"},
    {"moe-expert-shape", {"moe-expert-shape.gguf: offset ", "tensor 'blk.0.ffn_gate_exps.weight' has shape [32, 8, 3]", "need [32, 8, 4]"}, "arch/bad/"},
    {"swa-window-0", {"swa-window-0.gguf: offset ", "metadata 'gemma2.attention.sliding_window' is 0, expected 1 to"}, "arch/bad/"},
    {"rope-scaling-unknown", {"rope-scaling-unknown.gguf: offset ", "metadata 'qwen3.rope.scaling.type' is 'dynamic': that rope scaling is not supported; none, linear and yarn are"}, "arch/bad/"},
};

class BadModelFile : public ::testing::TestWithParam<BadFile> {};

TEST_P(BadModelFile, GivesOneClearLine) {
    const BadFile& c = GetParam();
    const std::string file = std::string(c.name) + ".gguf";
    auto model = build(R"({"graph": {"model": "gguf", "file": ")" + std::string(c.dir) + file + R"("}})");
    ASSERT_FALSE(model.is_ok()) << file << " was accepted";
    const std::string m = model.status().message();
    EXPECT_EQ(m.rfind("test.json: /graph/file: ", 0), 0u) << m;
    for (const char* part : c.says) EXPECT_NE(m.find(part), std::string::npos) << "missing '" << part << "' in:\n" << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

INSTANTIATE_TEST_SUITE_P(Corpus, BadModelFile, ::testing::ValuesIn(kBadFiles), [](const ::testing::TestParamInfo<BadFile>& info) {
    std::string name = info.param.name;
    for (char& c : name) c = c == '-' ? '_' : c;
    return name;
});

// Every file of the corpus is in the table, and its unbroken original builds.
TEST(BadModelFile, EveryCorpusFileIsTested) {
    const nlohmann::json& bad = manifest().at("bad_files");
    const nlohmann::json& arch_bad = arch_manifest().at("bad_files");
    EXPECT_EQ(bad.size() + arch_bad.size(), kBadFiles.size());
    for (const BadFile& c : kBadFiles) EXPECT_TRUE((std::string(c.dir) == "bad/" ? bad : arch_bad).contains(c.name)) << c.name;
    auto good = build(R"({"graph": {"model": "gguf", "file": "bad/good.gguf"}})");
    EXPECT_TRUE(good.is_ok()) << good.status().to_string();
}

GgufValue u32s(std::initializer_list<uint32_t> values) {
    std::vector<GgufValue> items;
    for (uint32_t v : values) items.push_back(GgufValue::u32(v));
    return GgufValue::array(GgufValueType::U32, std::move(items));
}

// --- files edited in place (patched_gguf.hpp): the one line names what is wrong ----------------

// The message of building an edited file, which must be refused.
std::string refusal(const PatchedGguf& file) {
    auto model = build(R"({"graph": {"model": "gguf", "file": ")" + file.write_file() + R"("}})");
    EXPECT_FALSE(model.is_ok()) << "the edited file was accepted";
    const std::string m = model.is_ok() ? "" : model.status().message();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    return m;
}

// An expert count of 0 beside expert tensors blames the count, not the dense tensors the model
// would then lack, whatever the architecture (dense llama and deepseek2 read the count too).
TEST(EditedModelFile, AZeroExpertCountBesideExpertsNamesTheCount) {
    for (const auto& [fixture, arch] : {std::pair{"tiny-qwen3moe", "qwen3moe"}, {"tiny-mixtral", "llama"}, {"tiny-deepseek2", "deepseek2"}}) {
        PatchedGguf file(model_path(std::string("arch/") + fixture + ".gguf"));
        file.set_integer(std::string(arch) + ".expert_count", 0);
        const std::string m = refusal(file);
        EXPECT_NE(m.find("metadata '" + std::string(arch) + ".expert_count' is 0, but the file holds experts ('blk."), std::string::npos)
            << fixture << ": " << m;
        EXPECT_EQ(m.find("no tensor"), std::string::npos) << m;
    }
    // Without expert tensors, a mixture-of-experts architecture still needs experts.
    PatchedGguf file(model_path("arch/tiny-qwen3moe.gguf"));
    file.set_integer("qwen3moe.expert_count", 0);
    for (int il = 0; il < 2; ++il) {
        const std::string router = "blk." + std::to_string(il) + ".ffn_gate_inp.weight";
        file.rename(router, "blk." + std::to_string(il) + ".ffn_gate_inx.weight");
    }
    EXPECT_NE(refusal(file).find("metadata 'qwen3moe.expert_count' is 0: a mixture-of-experts architecture has experts"), std::string::npos);
}

TEST(EditedModelFile, AKeyLengthTooShortForTheRopeNamesTheKeyLength) {
    PatchedGguf file(model_path("arch/tiny-deepseek2.gguf"));
    file.set_integer("deepseek2.attention.key_length", 1);
    const std::string m = refusal(file);
    EXPECT_NE(m.find("the key heads of 1 values (deepseek2.attention.key_length) cannot hold the"), std::string::npos) << m;
    EXPECT_EQ(m.find("expected 2 to 1"), std::string::npos) << m;
}

TEST(EditedModelFile, AMissingSelectionBiasIsNamedAsMissing) {
    PatchedGguf file(model_path("arch/tiny-deepseek2.gguf"));
    file.rename("blk.1.exp_probs_b.bias", "blk.1.exp_probs_b.xias");
    EXPECT_NE(refusal(file).find("no tensor 'blk.1.exp_probs_b.bias', which a deepseek2 model needs"), std::string::npos);
}

// A tensor of a type its role cannot have is named with its offset and what the role needs, before
// an op refuses it in op words (mul_mat, mul_mat_id, flash_attn_ext: and a placeholder of the
// refused router once crashed the builder).
TEST(EditedModelFile, ATensorOfTheWrongTypeIsNamedNotTheOpThatUsesIt) {
    constexpr uint32_t kI32 = 26, kI16 = 25, kF16 = 1;  // each the size of the stored type, so the data still fits
    struct Case {
        const char* fixture;
        const char* tensor;
        uint32_t type;
        const char* says;
    };
    for (const Case& c : {Case{"tiny-qwen3moe", "blk.0.ffn_gate_inp.weight", kI32, "is i32; a weight matrix must be a float or quantized type"},
                          Case{"tiny-qwen3moe", "blk.1.ffn_up_exps.weight", kI16, "is i16, which xbackend cannot compute with (f32, f16"},
                          Case{"tiny-gpt-oss", "blk.0.attn_sinks.weight", kF16, "is f16; norm weights and biases must be f32"}}) {
        PatchedGguf file(model_path(std::string("arch/") + c.fixture + ".gguf"));
        file.set_type(c.tensor, c.type);
        const std::string m = refusal(file);
        EXPECT_NE(m.find(": offset "), std::string::npos) << m;
        EXPECT_NE(m.find("tensor '" + std::string(c.tensor) + "' " + c.says), std::string::npos) << m;
        for (const char* op_word : {"mul_mat", "flash_attn_ext", "/graph/params"}) EXPECT_EQ(m.find(op_word), std::string::npos) << m;
    }
}

// Phi-3's long rope factors are unused at a short context, and checked all the same.
TEST(EditedModelFile, TheUnusedRopeFactorSetIsCheckedAtLoad) {
    PatchedGguf file(model_path("arch/tiny-phi3.gguf"));
    file.set_dim("rope_factors_long.weight", 0, 7);
    const std::string m = refusal(file);
    EXPECT_NE(m.find("tensor 'rope_factors_long.weight' has shape [7]"), std::string::npos) << m;
}

// A batch above the 65536 tokens of n_tokens' range says the limit, from a config or --tokens.
TEST(EditedModelFile, MoreTokensThanABatchMayHaveSayTheLimit) {
    const nlohmann::json tokens(kMaxBatchTokens + 1, 1);
    auto from_config = build(R"({"graph": {"model": "gguf", "file": "arch/tiny-qwen3.gguf", "params": {"tokens": )" + tokens.dump() + "}}}");
    ASSERT_FALSE(from_config.is_ok());
    EXPECT_NE(from_config.status().message().find("65537 tokens are more than the 65536 a batch may have"), std::string::npos)
        << from_config.status().message();
    BuildOptions options;
    options.tokens = std::vector<int32_t>(kMaxBatchTokens + 1, 1);
    auto from_flag = build(R"({"graph": {"model": "gguf", "file": "arch/tiny-qwen3.gguf"}})", options);
    ASSERT_FALSE(from_flag.is_ok());
    EXPECT_NE(from_flag.status().message().find("--tokens gives 65537 tokens, more than the 65536 a batch may have"), std::string::npos)
        << from_flag.status().message();
}

// LFM2's per-layer head_count_kv marks its short-convolution layers by 0: read as the layer
// pattern; a list of the wrong length, one without attention layers, attention layers of different
// head counts, or zeros in an architecture without recurrent layers are one line at the key.
TEST(GgufModel, HybridLayerPatternComesFromThePerLayerHeadCounts) {
    auto lfm2 = info_of(model_path("arch/tiny-lfm2.gguf"));
    ASSERT_TRUE(lfm2.is_ok()) << lfm2.status().to_string();
    EXPECT_EQ(lfm2->params.recurrent, (std::vector<bool>{true, true, false, true}));
    EXPECT_EQ(lfm2->params.n_head_kv, 2);
    EXPECT_EQ(lfm2->params.conv_kernel, 3);
    EXPECT_EQ(layers_text(lfm2->params), "3 short convolutions of 3 inputs (layers 0, 1, 3), 1 attention (layers 2)");
    const std::string key = "lfm2.attention.head_count_kv";
    const struct {
        std::string file, key;
        GgufValue value;
        std::string message;
    } bad[] = {
        {"arch/tiny-lfm2.gguf", key, u32s({0, 2, 0}), "has 3 values, expected one per layer (4)"},
        {"arch/tiny-lfm2.gguf", key, u32s({0, 0, 0, 0}), "is 0 for every layer: a model needs an attention layer"},
        {"arch/tiny-lfm2.gguf", key, u32s({0, 2, 1, 0}), "gives the attention layers 2 and 1 heads"},
        {"arch/tiny-qwen3.gguf", "qwen3.attention.head_count_kv", u32s({0, 2}), "is 0 for some layers, which qwen3 models do not have"},
    };
    int i = 0;
    for (const auto& b : bad) {
        auto info = info_of(with_metadata(b.file, b.key, b.value, "hybrid-bad-" + std::to_string(i++)));
        ASSERT_FALSE(info.is_ok()) << b.message;
        EXPECT_NE(info.status().message().find("offset "), std::string::npos) << info.status().message();
        EXPECT_NE(info.status().message().find(b.message), std::string::npos) << info.status().message();
    }
    // A convolution width that is not the kernels', and a missing recurrent tensor, name the tensor.
    const std::string wider = build_message(with_metadata("arch/tiny-lfm2.gguf", "lfm2.shortconv.l_cache", GgufValue::u32(4), "lfm2-l-cache-4"));
    EXPECT_NE(wider.find("tensor 'blk.0.shortconv.conv.weight' has shape [3, 64]"), std::string::npos) << wider;
    EXPECT_NE(wider.find("short convolutions of 4 inputs (shortconv.l_cache) need [4, 64]"), std::string::npos) << wider;
    // Without its convolution width the model cannot be built; without a recurrent layer's tensor
    // neither, and the line names the tensor.
    auto missing = info_of(copy_fixture("arch/tiny-lfm2.gguf", "lfm2-no-l-cache", "lfm2.shortconv.l_cache", ""));
    ASSERT_FALSE(missing.is_ok());
    EXPECT_NE(missing.status().message().find("no metadata 'lfm2.shortconv.l_cache'"), std::string::npos) << missing.status().message();
    const std::string no_in_proj = build_message(copy_fixture("arch/tiny-lfm2.gguf", "lfm2-no-in-proj", "", "blk.1.shortconv.in_proj.weight"));
    EXPECT_NE(no_in_proj.find("no tensor 'blk.1.shortconv.in_proj.weight', which a lfm2 model needs"), std::string::npos) << no_in_proj;
}

// A hybrid's graph writes its recurrent states back at its end (n_kv > 0): a second compute would
// continue from them. set_inputs empties them, so that every compute the tools time or compare
// starts from an empty state, as each of llama-bench's repetitions does.
TEST(GgufModel, EveryComputeOfAHybridStartsFromEmptyStates) {
    for (const char* file : {"arch/tiny-lfm2.gguf", "arch/tiny-granitehybrid.gguf", "arch/tiny-qwen35.gguf", "arch/tiny-qwen3next-ssm-in.gguf",
                             "arch/tiny-nemotron-h.gguf"}) {
        SCOPED_TRACE(file);
        auto model = build(model_config(file, 7, 0));
        ASSERT_TRUE(model.is_ok()) << model.status().to_string();
        EXPECT_FALSE(model->states.empty());
        auto placed = testing::compute_alone(std::move(model).value());
        ASSERT_TRUE(placed.is_ok()) << placed.status().to_string();
        Model& m = (*placed)->model;
        Backend& backend = *(*placed)->backends.front();
        const std::vector<float> first = tensor_get_f32(*m.find("result_output")).value();
        ASSERT_TRUE(backend.graph_compute(m.graph).is_ok());
        EXPECT_GT(nmse(tensor_get_f32(*m.find("result_output")).value(), first), 1e-6) << "the written states carry over";
        ASSERT_TRUE(m.set_inputs().is_ok());
        ASSERT_TRUE(backend.graph_compute(m.graph).is_ok());
        EXPECT_EQ(tensor_get_f32(*m.find("result_output")).value(), first);
    }
}

// Granite 4.0-H: the Mamba-2 layers' sizes and Granite's multipliers from the file's keys; sizes
// that do not fit and missing keys or tensors are one line naming the key or the tensor.
TEST(GgufModel, GraniteHybridReadsItsMamba2Hyperparameters) {
    auto moe = info_of(model_path("arch/tiny-granitehybrid.gguf"));
    ASSERT_TRUE(moe.is_ok()) << moe.status().to_string();
    const DecoderParams& p = moe->params;
    EXPECT_EQ(p.recurrent, (std::vector<bool>{true, false, true, true}));
    EXPECT_EQ(p.ssm.d_inner, 128);
    EXPECT_EQ(p.ssm.d_state, 16);
    EXPECT_EQ(p.ssm.n_head, 8);
    EXPECT_EQ(p.ssm.n_group, 1);
    EXPECT_EQ(p.conv_kernel, 4);
    EXPECT_FALSE(p.rope);
    EXPECT_FLOAT_EQ(p.embd_scale, 4.0f);
    EXPECT_FLOAT_EQ(p.kq_scale, 0.2f);
    EXPECT_FLOAT_EQ(p.residual_scale, 0.6f);
    EXPECT_FLOAT_EQ(p.logit_scale, 2.5f);
    EXPECT_EQ(p.experts.n_ff, 24);
    EXPECT_EQ(p.experts.n_shared, 1);
    EXPECT_EQ(p.experts.n_ff_shared, 32);
    EXPECT_TRUE(p.experts.normalize);
    EXPECT_EQ(layers_text(p), "3 Mamba-2 (8 heads of 16 in 1 group, state 16, convolution of 4) (layers 0, 2, 3), 1 attention (layers 1)");
    auto dense = info_of(model_path("arch/tiny-granitehybrid-dense.gguf"));
    ASSERT_TRUE(dense.is_ok()) << dense.status().to_string();
    EXPECT_TRUE(dense->params.rope);
    EXPECT_FALSE(dense->params.has_experts());

    const std::string file = "arch/tiny-granitehybrid.gguf";
    const struct {
        std::string key;
        GgufValue value;
        std::string message;
    } bad[] = {
        {"granitehybrid.ssm.time_step_rank", GgufValue::u32(7), "'granitehybrid.ssm.time_step_rank' (the Mamba-2 heads) does not divide granitehybrid.ssm.inner_size 128"},
        {"granitehybrid.ssm.group_count", GgufValue::u32(3), "'granitehybrid.ssm.group_count' does not divide the 8 Mamba-2 heads"},
        {"granitehybrid.ssm.conv_kernel", GgufValue::u32(1), "granitehybrid.ssm.conv_kernel"},
    };
    int i = 0;
    for (const auto& b : bad) {
        auto info = info_of(with_metadata(file, b.key, b.value, "granite-bad-" + std::to_string(i++)));
        ASSERT_FALSE(info.is_ok()) << b.message;
        EXPECT_NE(info.status().message().find(b.message), std::string::npos) << info.status().message();
    }
    auto no_state = info_of(copy_fixture(file, "granite-no-state-size", "granitehybrid.ssm.state_size", ""));
    ASSERT_FALSE(no_state.is_ok());
    EXPECT_NE(no_state.status().message().find("no metadata 'granitehybrid.ssm.state_size'"), std::string::npos) << no_state.status().message();
    const std::string no_a = build_message(copy_fixture(file, "granite-no-ssm-a", "", "blk.2.ssm_a"));
    EXPECT_NE(no_a.find("no tensor 'blk.2.ssm_a', which a granitehybrid model needs"), std::string::npos) << no_a;
    const std::string wider = build_message(with_metadata(file, "granitehybrid.ssm.state_size", GgufValue::u32(8), "granite-state-8"));
    EXPECT_NE(wider.find("tensor 'blk.0.ssm_in.weight' has shape [64, 296]"), std::string::npos) << wider;
}

// Qwen3.5: the delta-net layers from full_attention_interval (every 4th attends), its sizes from
// the ssm.* keys; sizes the delta rule cannot run are one line naming the key.
TEST(GgufModel, Qwen35ReadsItsDeltaNetHyperparameters) {
    const std::string file = "arch/tiny-qwen35.gguf";
    auto info = info_of(model_path(file));
    ASSERT_TRUE(info.is_ok()) << info.status().to_string();
    const DecoderParams& p = info->params;
    EXPECT_EQ(p.recurrent, (std::vector<bool>{true, true, true, false}));
    EXPECT_EQ(p.ssm.kind, SsmKind::GatedDeltaNet);
    EXPECT_EQ(p.ssm.n_head, 4);
    EXPECT_EQ(p.ssm.n_group, 2);
    EXPECT_EQ(p.ssm.d_state, 16);
    EXPECT_EQ(p.rope_n_dims, 4);
    EXPECT_EQ(layers_text(p), "3 gated delta net (4 value heads, 2 key heads, of 16, convolution of 4) (layers 0, 1, 2), 1 attention (layers 3)");
    auto every_other = info_of(with_metadata(file, "qwen35.full_attention_interval", GgufValue::u32(2), "qwen35-interval-2"));
    ASSERT_TRUE(every_other.is_ok()) << every_other.status().to_string();
    EXPECT_EQ(every_other->params.recurrent, (std::vector<bool>{true, false, true, false}));
    const struct {
        std::string key;
        GgufValue value;
        std::string message;
    } bad[] = {
        {"qwen35.ssm.inner_size", GgufValue::u32(96), "'qwen35.ssm.inner_size' is not qwen35.ssm.time_step_rank (4 value heads) x qwen35.ssm.state_size (16)"},
        {"qwen35.ssm.group_count", GgufValue::u32(3), "'qwen35.ssm.group_count' (the key heads) does not divide the 4 value heads"},
    };
    int i = 0;
    for (const auto& b : bad) {
        auto got = info_of(with_metadata(file, b.key, b.value, "qwen35-bad-" + std::to_string(i++)));
        ASSERT_FALSE(got.is_ok()) << b.message;
        EXPECT_NE(got.status().message().find(b.message), std::string::npos) << got.status().message();
    }
}

// Qwen3-Next: the layer kinds from attention.recurrent_layers, which overrides the interval; value
// heads grouped by key head; the fused ssm_ba (and the older ssm_in) read as the file holds them.
// A pattern of the wrong length, a missing fused tensor or no experts are one line naming it.
TEST(GgufModel, Qwen3NextReadsItsLayerPatternAndFusedProjections) {
    const std::string file = "arch/tiny-qwen3next.gguf";
    auto info = info_of(model_path(file));
    ASSERT_TRUE(info.is_ok()) << info.status().to_string();
    const DecoderParams& p = info->params;
    EXPECT_EQ(p.recurrent, (std::vector<bool>{true, true, false, true})) << "recurrent_layers, not full_attention_interval 4";
    EXPECT_TRUE(p.ssm.grouped_heads);
    EXPECT_EQ(p.experts.n_ff_shared, 24);
    EXPECT_TRUE(p.experts.shared_gate);
    EXPECT_EQ(layers_text(p), "3 gated delta net (4 value heads grouped by 2 key heads, of 16, convolution of 4) (layers 0, 1, 3), 1 attention (layers 2)");

    auto fused = build(model_config(file, 7, 0));
    ASSERT_TRUE(fused.is_ok()) << fused.status().to_string();
    EXPECT_NE(fused->find("blk.0.ssm_ba.weight"), nullptr);
    EXPECT_NE(fused->find("blk.0.attn_qkv.weight"), nullptr);
    auto older = build(model_config("arch/tiny-qwen3next-ssm-in.gguf", 7, 0));
    ASSERT_TRUE(older.is_ok()) << older.status().to_string();
    EXPECT_NE(older->find("blk.0.ssm_in.weight"), nullptr);
    EXPECT_EQ(older->find("blk.0.attn_qkv.weight"), nullptr);

    const std::string short_pattern = build_message(with_metadata(file, "qwen3next.attention.recurrent_layers", bools({true, false}), "q3n-short-pattern"));
    EXPECT_NE(short_pattern.find("qwen3next.attention.recurrent_layers"), std::string::npos) << short_pattern;
    EXPECT_NE(short_pattern.find("offset "), std::string::npos) << short_pattern;
    const std::string no_ba = build_message(copy_fixture(file, "q3n-no-ssm-ba", "", "blk.3.ssm_ba.weight"));
    EXPECT_NE(no_ba.find("no tensor 'blk.3.ssm_ba.weight', which a qwen3next model needs"), std::string::npos) << no_ba;
    const std::string no_experts = build_message(copy_fixture(file, "q3n-no-experts", "qwen3next.expert_count", ""));
    EXPECT_NE(no_experts.find("qwen3next.expert_count"), std::string::npos) << no_experts;
}

// Nemotron-H: each layer Mamba-2, attention or an FFN alone, from the per-layer head_count_kv and
// feed_forward_length; only layer_norm_epsilon (its converter's) as the RMS norms' epsilon. A
// pattern of the wrong length, one width for every layer, unequal FFN widths and a missing
// tensor of a layer of each kind are one line naming the key or the tensor.
TEST(GgufModel, NemotronHReadsItsThreeLayerKinds) {
    const std::string file = "arch/tiny-nemotron-h.gguf";
    auto info = info_of(model_path(file));
    ASSERT_TRUE(info.is_ok()) << info.status().to_string();
    const DecoderParams& p = info->params;
    EXPECT_EQ(p.recurrent, (std::vector<bool>{true, false, false, true, false}));
    EXPECT_EQ(p.layer_n_ff, (std::vector<int>{0, 48, 0, 0, 48}));
    EXPECT_TRUE(p.layer_attends(2));
    EXPECT_FALSE(p.layer_attends(1));
    EXPECT_FALSE(p.rope);
    EXPECT_FLOAT_EQ(p.rms_eps, 1e-5f);
    EXPECT_EQ(layers_text(p), "2 Mamba-2 (8 heads of 16 in 2 groups, state 16, convolution of 4) (layers 0, 3), 1 attention (layers 2), "
                              "2 relu² FFN of 48 (layers 1, 4)");
    auto model = build(model_config(file, 12, 0));
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    EXPECT_NE(model->find("cache_k_l2"), nullptr) << "the attention layer keeps a cache";
    EXPECT_EQ(model->find("cache_k_l1"), nullptr) << "an FFN layer keeps none";
    EXPECT_EQ(model->find("cache_r_l1"), nullptr) << "an FFN layer keeps no state";
    EXPECT_NE(model->find("cache_s_l3"), nullptr);

    const auto ffn_lengths = [](std::initializer_list<uint32_t> widths) {
        std::vector<GgufValue> items;
        for (uint32_t w : widths) items.push_back(GgufValue::u32(w));
        return GgufValue::array(GgufValueType::U32, std::move(items));
    };
    const struct {
        std::string name;
        std::string path;
        std::string message;
    } bad[] = {
        {"short pattern", with_metadata(file, "nemotron_h.feed_forward_length", ffn_lengths({0, 48, 0}), "nh-short"),
         "metadata 'nemotron_h.feed_forward_length' has 3 values, expected one per layer (5)"},
        {"one width", with_metadata(file, "nemotron_h.feed_forward_length", GgufValue::u32(48), "nh-scalar"),
         "a nemotron_h model gives one per layer (0 for its Mamba-2 and attention layers)"},
        {"two widths", with_metadata(file, "nemotron_h.feed_forward_length", ffn_lengths({0, 48, 0, 0, 32}), "nh-widths"),
         "gives the feed-forward layers 48 and 32 rows"},
        {"no up", copy_fixture(file, "nh-no-up", "", "blk.4.ffn_up.weight"), "no tensor 'blk.4.ffn_up.weight', which a nemotron_h model needs"},
        {"no scan state", copy_fixture(file, "nh-no-a", "", "blk.3.ssm_a"), "no tensor 'blk.3.ssm_a', which a nemotron_h model needs"},
        {"no attention", copy_fixture(file, "nh-no-k", "", "blk.2.attn_k.weight"), "no tensor 'blk.2.attn_k.weight', which a nemotron_h model needs"},
        {"wider state", with_metadata(file, "nemotron_h.ssm.state_size", GgufValue::u32(8), "nh-state-8"),
         "tensor 'blk.0.ssm_in.weight' has shape [64, 328]"},
    };
    for (const auto& b : bad) {
        const std::string got = build_message(b.path);
        EXPECT_NE(got.find(b.message), std::string::npos) << b.name << ": " << got;
        // Metadata is somewhere in the file; a missing tensor is nowhere.
        if (b.message.find("no tensor") == std::string::npos) {
            EXPECT_NE(got.find("offset "), std::string::npos) << b.name << ": " << got;
        }
    }
}

// Nemotron-H MoE: the FFN layers are ungated relu² experts chosen by sigmoid scores with a
// selection bias, normalised and scaled, beside an ungated shared expert; experts in a latent space
// (Nemotron 3 Super) are refused in one line naming the key.
TEST(GgufModel, NemotronHMoeReadsItsUngatedExperts) {
    const std::string file = "arch/tiny-nemotron-h-moe.gguf";
    auto reader = GgufReader::open(model_path(file));
    ASSERT_TRUE(reader.is_ok()) << reader.status().to_string();
    auto info = read_gguf_model_info(*reader);
    ASSERT_TRUE(info.is_ok()) << info.status().to_string();
    const ExpertParams& e = info->params.experts;
    EXPECT_EQ(e.gating, ExpertGating::Sigmoid);
    EXPECT_TRUE(e.selection_bias);
    EXPECT_TRUE(e.ungated);
    EXPECT_TRUE(e.normalize);
    EXPECT_FLOAT_EQ(e.weights_scale, 2.5f);
    EXPECT_EQ(e.n_ff_shared, 24);
    EXPECT_EQ(layers_text(info->params), "2 Mamba-2 (8 heads of 16 in 2 groups, state 16, convolution of 4) (layers 0, 3), 1 attention (layers 2), "
                                         "2 experts (layers 1, 4)");
    auto model = build(model_config(file, 7, 0));
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    EXPECT_NE(model->find("blk.1.ffn_up_exps.weight"), nullptr);
    EXPECT_EQ(model->find("blk.1.ffn_gate_exps.weight"), nullptr) << "ungated experts";
    EXPECT_EQ(model->find("blk.1.ffn_gate_shexp.weight"), nullptr);
    auto latent = build(model_config(with_metadata(file, "nemotron_h_moe.moe_latent_size", GgufValue::u32(32), "nhm-latent"), 7, 0));
    ASSERT_FALSE(latent.is_ok());
    EXPECT_NE(latent.status().message().find("'nemotron_h_moe.moe_latent_size' is 32"), std::string::npos) << latent.status().message();
    EXPECT_NE(latent.status().message().find("not supported"), std::string::npos) << latent.status().message();
}

// LFM2-MoE: the dense layers first (leading_dense_block_count), then sigmoid-routed experts chosen
// with exp_probs_b and normalised, unscaled whatever the file says (llama.cpp reads no
// expert_weights_scale for it); a file without expert_gating_func, which llama.cpp needs, is refused
// naming the key.
TEST(GgufModel, Lfm2MoeReadsItsDenseLeadAndSigmoidExperts) {
    const std::string file = "arch/tiny-lfm2moe.gguf";
    auto info = info_of(model_path(file));
    ASSERT_TRUE(info.is_ok()) << info.status().to_string();
    const DecoderParams& p = info->params;
    EXPECT_EQ(p.n_dense_lead, 1);
    EXPECT_EQ(p.experts.gating, ExpertGating::Sigmoid);
    EXPECT_TRUE(p.experts.selection_bias);
    EXPECT_TRUE(p.experts.normalize);
    EXPECT_EQ(p.experts.n_shared, 0);
    EXPECT_EQ(layers_text(p), "3 short convolutions of 3 inputs (layers 0, 2, 3), 1 attention (layers 1)");
    auto model = build(model_config(file, 7, 0));
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    EXPECT_NE(model->find("blk.0.ffn_gate.weight"), nullptr) << "the leading dense layer";
    EXPECT_EQ(model->find("blk.0.ffn_gate_exps.weight"), nullptr);
    EXPECT_NE(model->find("blk.1.ffn_gate_exps.weight"), nullptr);
    EXPECT_NE(model->find("blk.1.exp_probs_b.bias"), nullptr);

    auto scaled = info_of(with_metadata(file, "lfm2moe.expert_weights_scale", GgufValue::f32(2.5f), "lfm2moe-scaled"));
    ASSERT_TRUE(scaled.is_ok()) << scaled.status().to_string();
    EXPECT_FLOAT_EQ(scaled->params.experts.weights_scale, 1.0f);

    const std::string no_gating = build_message(copy_fixture(file, "lfm2moe-no-gating", "lfm2moe.expert_gating_func", ""));
    EXPECT_NE(no_gating.find("lfm2moe.expert_gating_func"), std::string::npos) << no_gating;
}

// A weight of a type id no GGUF type has: one line naming the tensor, its offset and every type
// xbackend computes with, the list made from the type table (the k-quants of 2 and 3 bits, the IQ,
// TQ and FP4 types included; not q8_K, which no weight has).
TEST(GgufModel, UnknownWeightTypeListsEveryComputableType) {
    auto in = GgufReader::open(model_path("tiny-llama.gguf"));
    ASSERT_TRUE(in.is_ok());
    const GgufTensorInfo* t = in->find_tensor("blk.0.attn_q.weight");
    ASSERT_NE(t, nullptr);
    std::ifstream src(model_path("tiny-llama.gguf"), std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(src)), std::istreambuf_iterator<char>());
    // The tensor's info: name (u64 length, bytes), n_dims (u32), ne (u64 each), type (u32).
    const size_t type_at = t->info_offset + 8 + t->name.size() + 4 + 8 * static_cast<size_t>(t->n_dims);
    const uint32_t unknown = 99;
    std::memcpy(bytes.data() + type_at, &unknown, sizeof(unknown));
    const std::string path = (std::filesystem::temp_directory_path() / "xb-unknown-type.gguf").string();
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    auto model = build(model_config(path, 7, 0));
    ASSERT_FALSE(model.is_ok());
    const std::string m = model.status().message();
    EXPECT_NE(m.find("tensor 'blk.0.attn_q.weight' is of unknown type id 99, which xbackend cannot compute with (f32, f16, bf16"),
              std::string::npos) << m;
    for (const char* type : {"q2_K", "q3_K", "iq2_xxs", "iq4_xs", "tq1_0", "tq2_0", "mxfp4", "nvfp4"}) {
        EXPECT_NE(m.find(", " + std::string(type)), std::string::npos) << type << " missing from: " << m;
    }
    EXPECT_EQ(m.find("q8_K"), std::string::npos) << m;
}

}  // namespace
}  // namespace xb::config
