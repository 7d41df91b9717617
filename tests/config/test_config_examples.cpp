// Every example config under configs/ loads, builds, is placed and computes, with finite outputs;
// the graph sizes and placements are what the configs say.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <fstream>
#include <algorithm>
#include <set>

#include "config/op_table.hpp"
#include "core/op_params.hpp"
#include "report/metrics.hpp"
#include "test_config_util.hpp"

namespace xb::config {
namespace {

using testing::compute_alone;
using testing::compute_scheduled;
using testing::config_path;
using testing::expect_finite_outputs;
using testing::load_and_build;

const char* const kExamples[] = {"default.json",          "mlp.json",        "attention.json",
                                 "llama-decoder.json",    "llama-decoder-gqa.json",
                                 "llama-decoder-offload.json", "llama-decoder-split.json",
                                 "llama-decoder-split-row.json", "all-ops.json", "decoder-q4_K.json"};

// The offload and split examples name CUDA0 and CUDA1; without them they run on the simulator.
BuildOptions options_for(const std::string& name) {
    BuildOptions o;
    if (name != "llama-decoder-offload.json" && name != "llama-decoder-split.json") return o;
    for (const char* gpu : {"CUDA0", "CUDA1"}) {
        if (global_registry().dev_by_name(gpu) == nullptr) o.device_map.emplace_back(gpu, std::string("SIM") + gpu[4]);
    }
    return o;
}

class ExampleConfig : public ::testing::TestWithParam<const char*> {};

TEST_P(ExampleConfig, LoadsBuildsAndComputesOnTheCpu) {
    BuildOptions o;
    o.backends = {"CPU"};
    auto model = load_and_build(config_path(GetParam()), o);
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    EXPECT_GT(model->graph.n_nodes(), 0);
    EXPECT_FALSE(model->outputs.empty());
    for (const WeightPlacement& w : model->placement.weights) EXPECT_EQ(w.device, "CPU") << w.tensor->name;
    auto placed = compute_alone(std::move(model).value());
    ASSERT_TRUE(placed.is_ok()) << placed.status().to_string();
    expect_finite_outputs((*placed)->model);
}

TEST_P(ExampleConfig, BuildsWithItsOwnPlacement) {
    auto model = load_and_build(config_path(GetParam()), options_for(GetParam()));
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    EXPECT_FALSE(model->placement.backends.empty());
}

// Decoders at a width that keeps the tests quick; other models are left as they are.
void shrink_llama(ConfigSpec& spec) {
    if (!spec.model || spec.model->kind != ModelKind::LlamaDecoder) return;
    DecoderParams& p = spec.model->llama;
    // Rows of quantized weights stay whole blocks (q4_K: 256).
    p.n_embd = std::max(128, static_cast<int>(blck_size(p.weight_type)));
    p.n_head = 4;
    p.n_head_kv = std::min(p.n_head_kv, 4);
    p.n_ff = std::max(256, static_cast<int>(blck_size(p.weight_type)));
    p.n_vocab = 500;
}

struct SplitAndWhole {
    std::unique_ptr<testing::Placed> split;  // through the scheduler, placed by `split_options`
    std::unique_ptr<testing::Placed> whole;  // the CPU alone
};

Result<SplitAndWhole> compute_split_and_whole(const ConfigSpec& spec, const BuildOptions& split_options) {
    XB_ASSIGN_OR_RETURN(Model split, build_model(spec, global_registry(), split_options));
    BuildOptions cpu_only;
    cpu_only.backends = {"CPU"};
    XB_ASSIGN_OR_RETURN(Model whole, build_model(spec, global_registry(), cpu_only));
    SplitAndWhole out;
    XB_ASSIGN_OR_RETURN(out.split, compute_scheduled(std::move(split)));
    XB_ASSIGN_OR_RETURN(out.whole, compute_alone(std::move(whole)));
    return out;
}

// Every output of `got` within `max_nmse` of `want`'s, with no NaN/Inf mismatch.
::testing::AssertionResult outputs_match(const Model& got, const Model& want, double max_nmse) {
    if (got.outputs.size() != want.outputs.size()) return ::testing::AssertionFailure() << "output counts differ";
    for (size_t i = 0; i < got.outputs.size(); ++i) {
        auto g = tensor_get_f32(*got.outputs[i]);
        auto w = tensor_get_f32(*want.outputs[i]);
        if (!g.is_ok() || !w.is_ok()) return ::testing::AssertionFailure() << "cannot read output " << i;
        const report::ErrorMetrics m = report::compare(*g, *w);
        if (m.nmse > max_nmse || m.nan_count + m.inf_mismatch > 0) {
            return ::testing::AssertionFailure() << got.outputs[i]->name << ": nmse " << m.nmse << ", NaN/Inf "
                                               << m.nan_count + m.inf_mismatch;
        }
    }
    return ::testing::AssertionSuccess();
}

// The config split between the simulated device (which holds the weights) and the CPU by the
// scheduler computes what the CPU alone computes: the same kernels on both sides, so only thread
// partitions of reductions may differ.
TEST_P(ExampleConfig, ComputesOnSimAndCpuThroughTheSchedulerLikeTheCpuAlone) {
    auto spec = load_config(config_path(GetParam()));
    ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
    shrink_llama(*spec);
    BuildOptions split_options = options_for(GetParam());
    split_options.backends = {"SIM0", "CPU"};
    auto runs = compute_split_and_whole(*spec, split_options);
    ASSERT_TRUE(runs.is_ok()) << runs.status().to_string();
    EXPECT_TRUE(outputs_match(runs->split->model, runs->whole->model, 1e-10));
}

INSTANTIATE_TEST_SUITE_P(Configs, ExampleConfig, ::testing::ValuesIn(kExamples),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                             std::string name = info.param;
                             name = name.substr(0, name.find('.'));
                             for (char& c : name) c = c == '-' ? '_' : c;
                             return name;
                         });

TEST(ConfigExamples, DefaultIsASmallDecoder) {
    auto model = load_and_build(config_path("default.json"));
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    EXPECT_EQ(model->n_tokens, 8);
    EXPECT_EQ(model->outputs.size(), 1u);
    EXPECT_EQ(model->outputs[0]->name, "result_output");
    EXPECT_EQ(model->outputs[0]->ne[0], 1000);
    EXPECT_EQ(model->placement.backends, std::vector<std::string>{"CPU"});
    EXPECT_GT(model->matmul_flops, 0.0);
}

TEST(ConfigExamples, DecoderHasTheAllocatorIssueShape) {
    auto model = load_and_build(config_path("llama-decoder.json"));
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    const Tensor* logits = model->find("result_output");
    ASSERT_NE(logits, nullptr);
    EXPECT_EQ(logits->ne[0], 32000);
    EXPECT_EQ(logits->ne[1], 32);
    ASSERT_NE(model->find("blk.3.ffn_down.weight"), nullptr);
    EXPECT_EQ(model->find("blk.3.ffn_down.weight")->ne[0], 2816);
    EXPECT_EQ(model->find("blk.0.attn_k.weight")->ne[1], 1024);
    auto gqa = load_and_build(config_path("llama-decoder-gqa.json"));
    ASSERT_TRUE(gqa.is_ok()) << gqa.status().to_string();
    EXPECT_EQ(gqa->find("blk.0.attn_k.weight")->ne[1], 256);  // 4 kv heads of 64
}

TEST(ConfigExamples, OffloadPutsTheLastHalfOfTheLayersOnTheGpu) {
    auto model = load_and_build(config_path("llama-decoder-offload.json"), options_for("llama-decoder-offload.json"));
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    const ModelPlacement& p = model->placement;
    ASSERT_EQ(p.backends.size(), 2u);
    const std::string gpu = p.backends[0];
    EXPECT_EQ(p.device_of(*model->find("blk.0.attn_q.weight")), "CPU");
    EXPECT_EQ(p.device_of(*model->find("blk.1.ffn_up.weight")), "CPU");
    EXPECT_EQ(p.device_of(*model->find("blk.2.attn_q.weight")), gpu);
    EXPECT_EQ(p.device_of(*model->find("blk.3.ffn_norm.weight")), gpu);
    EXPECT_EQ(p.device_of(*model->find("token_embd.weight")), "CPU");
    EXPECT_EQ(p.device_of(*model->find("output.weight")), "CPU");  // 2 layers < 4: the output layer stays
}

// The scheduler runs the offloaded decoder split across the GPU-type device and the CPU and gets the
// same logits as the CPU alone (a smaller decoder, to keep the test fast).
TEST(ConfigExamples, OffloadedDecoderMatchesTheCpu) {
    auto spec = load_config(config_path("llama-decoder-offload.json"));
    ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
    shrink_llama(*spec);
    auto runs = compute_split_and_whole(*spec, options_for("llama-decoder-offload.json"));
    ASSERT_TRUE(runs.is_ok()) << runs.status().to_string();
    EXPECT_GE(runs->split->sched->n_splits(), 2);
    EXPECT_TRUE(outputs_match(runs->split->model, runs->whole->model, 1e-10));
}

TEST(ConfigExamples, AllOpsCoversEveryCoreOp) {
    auto model = load_and_build(config_path("all-ops.json"));
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    std::set<Op> seen;
    for (const Tensor* n : model->graph.nodes()) seen.insert(n->op);
    for (int i = 1; i < kOpCount; ++i) {
        EXPECT_TRUE(seen.count(static_cast<Op>(i))) << "all-ops.json does not use " << op_name(static_cast<Op>(i));
    }
    for (int i = 0; i < kUnaryOpCount; ++i) {
        bool found = false;
        for (const Tensor* n : model->graph.nodes()) {
            found = found || (n->op == Op::Unary && static_cast<int>(UnaryParams::load(*n).op) == i);
        }
        EXPECT_TRUE(found) << "all-ops.json does not use unary " << unary_op_name(static_cast<UnaryOp>(i));
    }
    EXPECT_TRUE(model->notes.empty()) << model->notes.front();
}

// The decoder example with its weights in each newer block format: the formats with a quantizer
// quantize the random weights, the read-only ones (iq1..iq3, nvfp4) get random valid blocks from
// each tensor's seed. Either way the model builds, computes finite outputs, and computes the same
// on the simulated device through the scheduler as on the CPU alone.
class DecoderWeightType : public ::testing::TestWithParam<DType> {};

TEST_P(DecoderWeightType, ComputesOnSimAndCpuAlike) {
    auto spec = load_config(config_path("decoder-q4_K.json"));
    ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
    spec->model->llama.weight_type = GetParam();
    shrink_llama(*spec);
    BuildOptions split;
    split.backends = {"SIM0", "CPU"};
    auto both = compute_split_and_whole(*spec, split);
    ASSERT_TRUE(both.is_ok()) << both.status().to_string();
    expect_finite_outputs(both->whole->model);
    EXPECT_TRUE(outputs_match(both->split->model, both->whole->model, 1e-10));
}

INSTANTIATE_TEST_SUITE_P(Formats, DecoderWeightType,
                         ::testing::Values(DType::Q2_K, DType::Q3_K, DType::IQ2_XXS, DType::IQ1_M, DType::IQ4_NL,
                                           DType::IQ4_XS, DType::TQ1_0, DType::MXFP4, DType::NVFP4),
                         [](const ::testing::TestParamInfo<DType>& info) { return std::string(dtype_name(info.param)); });

// Every op the config format offers is documented in the schema, and the schema's top-level keys are
// the ones the parser accepts; every example uses only those keys.
TEST(ConfigExamples, SchemaDescribesTheFormat) {
    std::ifstream in(config_path("schema.json"));
    ASSERT_TRUE(in) << "configs/schema.json is missing";
    const nlohmann::json schema = nlohmann::json::parse(in);
    EXPECT_EQ(schema.at("$schema"), "https://json-schema.org/draft/2020-12/schema");
    const auto& props = schema.at("properties");
    for (const char* key : {"$schema", "name", "description", "seed", "defaults", "params", "tensors", "graph", "placement"}) {
        EXPECT_TRUE(props.contains(key)) << key;
    }
    EXPECT_EQ(schema.at("additionalProperties"), false);
    std::set<std::string> schema_ops;
    for (const auto& op : schema.at("$defs").at("op").at("properties").at("op").at("enum")) schema_ops.insert(op.get<std::string>());
    for (const std::string& op : op_table_names()) EXPECT_TRUE(schema_ops.count(op)) << "schema lacks op " << op;
    EXPECT_EQ(schema_ops.size(), op_table_names().size());
    // The tensor types are every type xbackend has but q8_K (the k-quants' activation format).
    std::set<std::string> schema_types, types;
    for (const auto& t : schema.at("$defs").at("dtype").at("enum")) schema_types.insert(t.get<std::string>());
    for (int i = 0; i < kDTypeCount; ++i) types.insert(dtype_name(static_cast<DType>(i)));
    types.erase("q8_K");
    EXPECT_EQ(schema_types, types);
    // Each op's arguments and parameters in the schema are the op table's.
    for (const auto& rule : schema.at("$defs").at("op").at("allOf")) {
        const std::string name = rule.at("if").at("properties").at("op").at("const");
        const OpDesc* d = find_op_desc(name);
        ASSERT_NE(d, nullptr) << name;
        const auto& then = rule.at("then").at("properties");
        std::set<std::string> keys, want, required, want_required;
        for (const auto& [k, v] : then.at("params").at("properties").items()) keys.insert(k);
        for (const auto& k : then.at("params").value("required", nlohmann::json::array())) required.insert(k.get<std::string>());
        for (const ParamDesc& p : d->params) {
            want.insert(std::string(p.key));
            if (p.required) want_required.insert(std::string(p.key));
        }
        EXPECT_EQ(keys, want) << name;
        EXPECT_EQ(required, want_required) << name;
        EXPECT_EQ(then.at("args").at("minItems"), d->min_args) << name;
        EXPECT_EQ(then.at("args").at("maxItems"), d->args.size()) << name;
    }
    EXPECT_EQ(schema.at("$defs").at("op").at("allOf").size(), op_table().size());
    for (const char* name : kExamples) {
        std::ifstream f(config_path(name));
        const nlohmann::json config = nlohmann::json::parse(f);
        for (const auto& [key, value] : config.items()) EXPECT_TRUE(props.contains(key)) << name << ": " << key;
        EXPECT_EQ(config.at("$schema"), "./schema.json") << name;
    }
}

}  // namespace
}  // namespace xb::config
