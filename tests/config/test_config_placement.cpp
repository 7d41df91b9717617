// Placement: backends in priority order, device names checked and mapped, weight rules,
// offload_layers as llama.cpp's n_gpu_layers, per-node overrides and scheduler options.
#include <gtest/gtest.h>

#include "local_registry.hpp"
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

// "regex" rules search the name as llama.cpp's -ot does: "w1$" finds mlp.0.w1 and mlp.1.w1, not b1.
TEST(ConfigPlacement, RegexRulesSearchTheNameAsLlamaCppsOverrideTensor) {
    if (!have_sim()) GTEST_SKIP() << "no simulated devices";
    auto m = build(mlp_with(R"({"backends": ["SIM0", "CPU"], "weights": [{"regex": "w1$", "device": "CPU"}]})"));
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    EXPECT_EQ(m->placement.device_of(*m->find("mlp.0.w1")), "CPU");
    EXPECT_EQ(m->placement.device_of(*m->find("mlp.1.w1")), "CPU");
    EXPECT_EQ(m->placement.device_of(*m->find("mlp.0.w2")), "SIM0");
    EXPECT_EQ(m->placement.device_of(*m->find("mlp.0.b1")), "SIM0");
}

TEST(ConfigPlacement, RuleNamesTakeAGlobOrARegexNotBoth) {
    const auto error = [](const std::string& rule) {
        auto m = build(mlp_with(R"({"backends": ["CPU"], "weights": [)" + rule + "]}"));
        return m.is_ok() ? std::string("built") : m.status().to_string();
    };
    EXPECT_NE(error(R"({"pattern": "w*", "regex": "w", "device": "CPU"})").find("/placement/weights/0: give the names as"),
              std::string::npos);
    EXPECT_NE(error(R"({"device": "CPU"})").find("/placement/weights/0: give the names as"), std::string::npos);
    EXPECT_NE(error(R"({"regex": "w1(", "device": "CPU"})").find("/placement/weights/0/regex: 'w1(' is not a regular expression"),
              std::string::npos);
    EXPECT_NE(error(R"({"regex": "^zz", "device": "CPU"})").find("/placement/weights/0/regex: pattern '^zz' matches no weight"),
              std::string::npos);
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
    auto whole = testing::compute_alone(build(config, cpu).value());
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

// llama.cpp's rule: with a device that has a pinned host buffer type among the backends, the
// weights that stay on the CPU (and the CPU's compute buffer) go there; host_weights "pageable"
// (or --host-weights) keeps them in the CPU's memory. Same results, same copies, faster copies.
TEST(ConfigPlacement, HostWeightsGoToThePinnedHostBufferTypeUnlessPageable) {
    xbt::LocalRegistry local;
    if (local.device("SIM0") == nullptr) GTEST_SKIP() << "no simulated devices";
    // offload_min_batch: SIM0 takes the batch-8 products of the CPU's layers too, copying their weights.
    local.configure("SIM0", "host_buffer=1,offload_min_batch=8,bandwidth_gbps=4,latency_us=0");
    const auto decoder = [](const std::string& extra) {
        return R"({"seed": 3, "graph": {"model": "llama_decoder", "params": {"n_layers": 4, "n_embd": 32, "n_head": 2,
                   "n_ff": 64, "n_tokens": 8, "n_vocab": 50}},
                   "placement": {"backends": ["SIM0", "CPU"], "offload_layers": 2)" + extra + "}}";
    };
    const auto build_here = [&](const std::string& text, const BuildOptions& options = {}) -> Result<Model> {
        XB_ASSIGN_OR_RETURN(ConfigSpec spec, parse_config(text, "placement.json"));
        return build_model(spec, local.registry(), options);
    };
    auto pinned_model = build_here(decoder(""));
    ASSERT_TRUE(pinned_model.is_ok()) << pinned_model.status().to_string();
    EXPECT_EQ(pinned_model->placement.host_buffer_device, "SIM0");
    BuildOptions pageable_option;
    pageable_option.host_weights = HostWeights::Pageable;
    auto pageable_model = build_here(decoder(""), pageable_option);
    ASSERT_TRUE(pageable_model.is_ok()) << pageable_model.status().to_string();
    EXPECT_EQ(pageable_model->placement.host_buffer_device, "");
    auto keyed = build_here(decoder(R"(, "host_weights": "pageable")"));
    ASSERT_TRUE(keyed.is_ok()) << keyed.status().to_string();
    EXPECT_EQ(keyed->placement.host_buffer_device, "") << "the config key does what the option does";
    EXPECT_NE(build_here(decoder(R"(, "host_weights": "locked")")).status().message().find("/placement/host_weights"),
              std::string::npos);
    // The global registry's SIM0 has no host buffer: nothing changes there.
    auto plain = build(decoder(""));
    ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
    EXPECT_EQ(plain->placement.host_buffer_device, "");

    auto pinned = testing::compute_scheduled(std::move(pinned_model).value(), local.registry(), true);
    ASSERT_TRUE(pinned.is_ok()) << pinned.status().to_string();
    auto pageable = testing::compute_scheduled(std::move(pageable_model).value(), local.registry(), true);
    ASSERT_TRUE(pageable.is_ok()) << pageable.status().to_string();
    for (const WeightPlacement& w : (*pinned)->model.placement.weights) {
        const BufferType& type = storage_buffer(*w.tensor)->type();
        EXPECT_STREQ(type.name(), w.device == "CPU" ? "SIM0_Host" : "SIM0") << w.tensor->name;
        EXPECT_EQ(type.is_pinned(), w.device == "CPU") << w.tensor->name;
        EXPECT_EQ(storage_buffer(*w.tensor)->usage(), BufferUsage::Weights) << w.tensor->name;
    }
    for (const WeightPlacement& w : (*pageable)->model.placement.weights) {
        EXPECT_STREQ(storage_buffer(*w.tensor)->type().name(), w.device == "CPU" ? "CPU" : "SIM0") << w.tensor->name;
    }

    // The same splits and copies, every host copy from or to pinned memory, and identical results.
    const SchedReport& a = (*pinned)->sched->report();
    const SchedReport& b = (*pageable)->sched->report();
    EXPECT_EQ(a.copy_bytes, b.copy_bytes);
    ASSERT_EQ(a.splits.size(), b.splits.size());
    size_t weight_copies = 0;
    double modelled_pinned = 0, modelled_pageable = 0;
    for (size_t i = 0; i < a.splits.size(); ++i) {
        ASSERT_EQ(a.splits[i].inputs.size(), b.splits[i].inputs.size());
        for (size_t j = 0; j < a.splits[i].inputs.size(); ++j) {
            const SplitInputReport& in = a.splits[i].inputs[j];
            EXPECT_EQ(in.host_memory, HostMemory::Pinned) << in.name;
            EXPECT_EQ(b.splits[i].inputs[j].host_memory, HostMemory::Pageable) << in.name;
            EXPECT_EQ(in.link_gbps, 4.0);
            EXPECT_DOUBLE_EQ(in.modelled_gbps(), in.link_gbps) << "no latency: the link's bandwidth";
            EXPECT_DOUBLE_EQ(b.splits[i].inputs[j].modelled_gbps(), 0.5 * in.link_gbps);
            EXPECT_GT(in.achieved_gbps(), 0.0);
            weight_copies += in.name.find(".weight") != std::string::npos ? 1 : 0;
        }
        modelled_pinned += std::max(a.splits[i].modelled_copy_seconds, 0.0);  // -1: no inputs
        modelled_pageable += std::max(b.splits[i].modelled_copy_seconds, 0.0);
    }
    EXPECT_GT(weight_copies, 0u) << "the offloaded products copy the CPU's weights";
    EXPECT_GT(modelled_pinned, 0.0);
    EXPECT_NEAR(modelled_pinned, 0.5 * modelled_pageable, 1e-9 * modelled_pageable)
        << "pinned copies cross the link at twice the pageable rate (the default pageable_ratio)";
    EXPECT_EQ(tensor_get_f32(*(*pinned)->model.outputs[0]).value(), tensor_get_f32(*(*pageable)->model.outputs[0]).value());
    BuildOptions cpu;
    cpu.backends = {"CPU"};
    auto alone = testing::compute_alone(build_here(decoder(""), cpu).value(), local.registry());
    ASSERT_TRUE(alone.is_ok()) << alone.status().to_string();
    EXPECT_EQ((*alone)->model.placement.host_buffer_device, "") << "no device with a host buffer takes part";
    const auto x = tensor_get_f32(*(*pinned)->model.outputs[0]).value();
    const auto y = tensor_get_f32(*(*alone)->model.outputs[0]).value();
    ASSERT_EQ(x.size(), y.size());
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], y[i], 1e-5f * (1 + std::fabs(y[i]))) << i;

    // Placing needs the backend of the host buffer's device.
    auto lone = build_here(decoder(""));
    ASSERT_TRUE(lone.is_ok());
    for (WeightPlacement& w : lone->placement.weights) w.device = "CPU";
    auto cpu_backend = local.init("CPU");
    Backend* only_cpu[] = {cpu_backend.get()};
    const Status s = place_and_init(*lone, only_cpu);
    EXPECT_NE(s.message().find("host weights go to the pinned memory of device 'SIM0' but no backend of it was given"),
              std::string::npos)
        << s.message();
}

}  // namespace
}  // namespace xb::config
