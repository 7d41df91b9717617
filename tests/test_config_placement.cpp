// Placement: backends in priority order, device names checked and mapped, weight rules,
// offload_layers as llama.cpp's n_gpu_layers, per-node overrides and scheduler options.
#include <gtest/gtest.h>

#include "test_config_util.hpp"

namespace xb::config {
namespace {

Result<Model> build(std::string_view text, const BuildOptions& options = {}) {
    XB_ASSIGN_OR_RETURN(ConfigSpec spec, parse_config(text, "placement.json"));
    return build_model(spec, global_registry(), options);
}

bool have_sim() { return global_registry().dev_by_name("SIM0") != nullptr && global_registry().dev_by_name("SIM1") != nullptr; }

const char* kMlp = R"({
    "graph": { "model": "mlp", "params": { "n_layers": 2, "n_embd": 16, "n_hidden": 32, "n_batch": 4 } },
    "placement": %s
})";

std::string mlp_with(const std::string& placement) {
    std::string s = kMlp;
    s.replace(s.find("%s"), 2, placement);
    return s;
}

TEST(ConfigPlacement, DefaultsToTheCpu) {
    auto m = build(R"({"graph": {"model": "mlp", "params": {"n_layers": 1, "n_embd": 8, "n_hidden": 8, "n_batch": 2}}})");
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    EXPECT_EQ(m->placement.backends, std::vector<std::string>{"CPU"});
    EXPECT_EQ(m->placement.weights.size(), m->weights.size());
    EXPECT_EQ(m->placement.scheduler.n_copies, 1);
    EXPECT_TRUE(m->placement.scheduler.op_offload);
}

TEST(ConfigPlacement, DeviceNamesAreCheckedCaseInsensitively) {
    auto m = build(mlp_with(R"({"backends": ["cpu"]})"));
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    EXPECT_EQ(m->placement.backends, std::vector<std::string>{"CPU"});
    const Status dup = build(mlp_with(R"({"backends": ["CPU", "cpu"]})")).status();
    EXPECT_NE(dup.message().find("/placement/backends/1: device 'CPU' is listed twice"), std::string::npos) << dup.message();
}

TEST(ConfigPlacement, MissingDeviceListsThePresentOnesAndTheMapping) {
    const Status s = build(mlp_with(R"({"backends": ["CUDA0", "CPU"]})")).status();
    if (global_registry().dev_by_name("CUDA0") != nullptr) GTEST_SKIP() << "CUDA0 is present";
    EXPECT_EQ(s.code(), StatusCode::NotFound);
    EXPECT_NE(s.message().find("placement.json: /placement/backends/0: device 'CUDA0' is not present (present: " +
                               global_registry().device_names() + ")"),
              std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find("--backends"), std::string::npos);
    if (have_sim()) {
        EXPECT_NE(s.message().find("--map CUDA0=SIM0"), std::string::npos) << s.message();
    }
    // From the command line the path is the option.
    BuildOptions o;
    o.backends = {"NPU3", "CPU"};
    const Status cli = build(mlp_with(R"({"backends": ["CPU"]})"), o).status();
    EXPECT_NE(cli.message().find("placement.json: --backends: device 'NPU3' is not present"), std::string::npos) << cli.message();
    // A mapping onto a device that is not present either says so.
    o.backends = {};
    o.device_map = {{"CUDA0", "SIM9"}};
    const Status mapped = build(mlp_with(R"({"backends": ["CUDA0", "CPU"]})"), o).status();
    EXPECT_NE(mapped.message().find("device 'SIM9' is not present"), std::string::npos) << mapped.message();
    EXPECT_NE(mapped.message().find("the config's 'CUDA0' is mapped onto it"), std::string::npos) << mapped.message();
}

TEST(ConfigPlacement, MappingAndOverridingTheBackends) {
    if (!have_sim()) GTEST_SKIP() << "no simulated devices";
    const std::string config = mlp_with(R"({"backends": ["CUDA0", "CPU"], "weights": [{"pattern": "mlp.1.*", "device": "CUDA0"}, {"pattern": "*", "device": "CPU"}]})");
    BuildOptions map;
    map.device_map = {{"CUDA0", "SIM1"}};
    auto m = build(config, map);
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    EXPECT_EQ(m->placement.backends, (std::vector<std::string>{"SIM1", "CPU"}));
    EXPECT_EQ(m->placement.device_of(*m->find("mlp.1.w2")), "SIM1");
    EXPECT_EQ(m->placement.device_of(*m->find("mlp.0.w2")), "CPU");
    // --backends SIM0,CPU leaves CUDA0 out: its rule is dropped (with a note), the rest stand.
    BuildOptions override_backends;
    override_backends.backends = {"SIM0", "CPU"};
    auto o = build(config, override_backends);
    ASSERT_TRUE(o.is_ok()) << o.status().to_string();
    EXPECT_EQ(o->placement.backends, (std::vector<std::string>{"SIM0", "CPU"}));
    EXPECT_EQ(o->placement.device_of(*o->find("mlp.1.w2")), "CPU");
    ASSERT_EQ(o->notes.size(), 1u);
    EXPECT_NE(o->notes[0].find("/placement/weights/0: device 'CUDA0' is not among --backends"), std::string::npos) << o->notes[0];
}

TEST(ConfigPlacement, WeightsWithoutARuleGoToTheFirstBackend) {
    if (!have_sim()) GTEST_SKIP() << "no simulated devices";
    auto m = build(mlp_with(R"({"backends": ["SIM0", "CPU"], "weights": [{"pattern": "mlp.*.b?", "device": "CPU"}]})"));
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    EXPECT_EQ(m->placement.device_of(*m->find("mlp.0.w1")), "SIM0");
    EXPECT_EQ(m->placement.device_of(*m->find("mlp.0.b1")), "CPU");
}

TEST(ConfigPlacement, OffloadLayersFollowsLlamaCpp) {
    if (!have_sim()) GTEST_SKIP() << "no simulated devices";
    const auto decoder = [](int offload) {
        return std::string(R"({"graph": {"model": "llama_decoder", "params": {"n_layers": 3, "n_embd": 16, "n_head": 2, "n_ff": 16, "n_tokens": 2, "n_kv": 4, "n_vocab": 10}},
                               "placement": {"backends": ["SIM0", "CPU"], "offload_layers": )") + std::to_string(offload) + "}}";
    };
    auto two = build(decoder(2));
    ASSERT_TRUE(two.is_ok()) << two.status().to_string();
    const ModelPlacement& p = two->placement;
    EXPECT_EQ(p.device_of(*two->find("blk.0.ffn_up.weight")), "CPU");
    EXPECT_EQ(p.device_of(*two->find("blk.1.ffn_up.weight")), "SIM0");
    EXPECT_EQ(p.device_of(*two->find("blk.2.attn_norm.weight")), "SIM0");
    EXPECT_EQ(p.device_of(*two->find("cache_k_l2")), "SIM0");  // a layer's cache goes with it
    EXPECT_EQ(p.device_of(*two->find("cache_v_l0")), "CPU");
    EXPECT_EQ(p.device_of(*two->find("output.weight")), "CPU");
    EXPECT_EQ(p.device_of(*two->find("token_embd.weight")), "CPU");
    auto all = build(decoder(4));  // more than n_layers: the output layer too
    ASSERT_TRUE(all.is_ok()) << all.status().to_string();
    EXPECT_EQ(all->placement.device_of(*all->find("output.weight")), "SIM0");
    EXPECT_EQ(all->placement.device_of(*all->find("output_norm.weight")), "SIM0");
    EXPECT_EQ(all->placement.device_of(*all->find("token_embd.weight")), "CPU");
    auto none = build(decoder(0));
    ASSERT_TRUE(none.is_ok()) << none.status().to_string();
    for (const WeightPlacement& w : none->placement.weights) EXPECT_EQ(w.device, "CPU") << w.tensor->name;
    // Without a GPU-type backend everything stays on the CPU, with a note.
    BuildOptions cpu;
    cpu.backends = {"CPU"};
    auto cpu_only = build(decoder(2), cpu);
    ASSERT_TRUE(cpu_only.is_ok()) << cpu_only.status().to_string();
    for (const WeightPlacement& w : cpu_only->placement.weights) EXPECT_EQ(w.device, "CPU") << w.tensor->name;
    ASSERT_EQ(cpu_only->notes.size(), 1u);
    EXPECT_NE(cpu_only->notes[0].find("offload_layers: no GPU-type device"), std::string::npos);
}

// Weights split across a simulated device and the CPU, one node pinned back to the CPU: the
// scheduler's result equals the CPU's alone.
TEST(ConfigPlacement, ScheduledRunMatchesTheCpu) {
    if (!have_sim()) GTEST_SKIP() << "no simulated devices";
    const std::string config = R"({
        "seed": 4,
        "tensors": {
            "x": { "shape": [16, 4], "role": "input" },
            "w1": { "shape": [16, 32] }, "w2": { "shape": [32, 16] }, "b": { "shape": [16] }
        },
        "graph": [
            { "name": "h", "op": "mul_mat", "args": ["w1", "x"] },
            { "name": "a", "op": "gelu", "args": ["h"] },
            { "name": "o", "op": "mul_mat", "args": ["w2", "a"] },
            { "name": "y", "op": "add", "args": ["o", "b"], "output": true }
        ],
        "placement": {
            "backends": ["SIM0", "CPU"],
            "weights": [ { "pattern": "w*", "device": "SIM0" }, { "pattern": "b", "device": "CPU" } ],
            "nodes": [ { "pattern": "a", "device": "CPU" } ],
            "scheduler": { "n_copies": 2, "op_offload": false }
        }
    })";
    auto split = build(config);
    ASSERT_TRUE(split.is_ok()) << split.status().to_string();
    EXPECT_EQ(split->placement.scheduler.n_copies, 2);
    EXPECT_FALSE(split->placement.scheduler.op_offload);
    ASSERT_EQ(split->placement.nodes.size(), 1u);
    EXPECT_EQ(split->placement.nodes[0].node->name, "a");
    auto run = testing::compute_scheduled(std::move(split).value());
    ASSERT_TRUE(run.is_ok()) << run.status().to_string();
    testing::Placed& p = **run;
    EXPECT_STREQ(p.model.find("w1")->buffer->type().name(), global_registry().dev_by_name("SIM0")->buffer_type().name());
    EXPECT_EQ(p.model.find("w1")->buffer->usage(), BufferUsage::Weights);
    EXPECT_EQ(&p.sched->tensor_backend(*p.model.find("a"))->device(), global_registry().dev_by_name("CPU"));
    EXPECT_EQ(&p.sched->tensor_backend(*p.model.find("h"))->device(), global_registry().dev_by_name("SIM0"));
    EXPECT_GE(p.sched->n_splits(), 3);

    BuildOptions cpu;
    cpu.backends = {"CPU"};
    auto whole = testing::compute_on_cpu(build(config, cpu).value());
    ASSERT_TRUE(whole.is_ok()) << whole.status().to_string();
    EXPECT_EQ((*whole)->model.notes.size(), 1u);  // the SIM0 rule dropped; the CPU rules stand
    const auto a = tensor_get_f32(*p.model.outputs[0]).value();
    const auto b = tensor_get_f32(*(*whole)->model.outputs[0]).value();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5f * (1 + std::fabs(b[i]))) << i;
}

TEST(ConfigPlacement, PlacingNeedsABackendForEveryWeightDevice) {
    if (!have_sim()) GTEST_SKIP() << "no simulated devices";
    auto m = build(mlp_with(R"({"backends": ["SIM0", "CPU"]})"));
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    auto cpu = global_registry().init_by_name("CPU").value();
    Backend* only_cpu[] = {cpu.get()};
    const Status s = place_and_init(*m, only_cpu);
    EXPECT_NE(s.message().find("weights go to device 'SIM0' but no backend of it was given"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace xb::config
