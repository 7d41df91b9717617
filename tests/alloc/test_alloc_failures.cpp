// Failure at every allocation and every copy: the fail_alloc hook of the simulated devices and the
// CPU and the sim's fail_copy fail the N-th buffer allocation or copy, swept over N and over the
// devices of a small decoder
// split over SIM1 (its first layer), SIM0 (its last) and the CPU, with pipeline copies. Each
// failure is a status (from placing the weights, allocating the graph, setting the inputs or
// computing), the scheduler stays usable (the same graph allocates and computes the same logits
// once the fault has fired), and nothing leaks (LeakSanitizer runs with the ASan job).
#include <gtest/gtest.h>

#include "local_registry.hpp"
#include "test_config_util.hpp"

namespace xb::config {
namespace {

constexpr const char* kConfig = R"({
  "seed": 3,
  "graph": { "model": "llama_decoder",
             "params": { "n_layers": 2, "n_embd": 32, "n_head": 4, "n_head_kv": 2, "n_ff": 48, "n_tokens": 3, "n_kv": 8, "n_vocab": 40 } },
  "placement": { "backends": ["SIM0", "SIM1", "CPU"], "offload_layers": 1,
                 "weights": [{ "pattern": "blk.0.*", "device": "SIM1" }], "scheduler": { "n_copies": 2 } }
})";

struct FaultyRun {
    Status status = Status::ok();  // the first failure
    std::vector<float> logits;     // after recovering from it
    bool fault_fired = false;
};

// Builds, places and computes kConfig with `device`'s N-th allocation (hook "fail_alloc") or copy
// ("fail_copy") failing; after a failure in the scheduler, allocates and computes the same graph
// again.
FaultyRun run_with_failure(const char* device, const std::string& hook, int n) {
    FaultyRun run;
    xbt::LocalRegistry local;
    local.configure(device, hook + "=" + std::to_string(n));
    auto spec = parse_config(kConfig, "alloc.json");
    EXPECT_TRUE(spec.is_ok());
    auto model = build_model(*spec, local.registry());
    EXPECT_TRUE(model.is_ok()) << model.status().to_string();
    auto backends = init_backends(model->placement, local.registry());
    EXPECT_TRUE(backends.is_ok()) << backends.status().to_string();
    const std::vector<Backend*> ptrs = testing::pointers(*backends);
    const auto fired = [&] { return local.device(device)->settings().find(hook + "=none") != std::string::npos; };
    run.status = place_and_init(*model, ptrs);
    if (!run.status.is_ok()) {
        run.fault_fired = fired();
        return run;  // no weights: nothing to compute
    }
    auto sched = Scheduler::create(ptrs, {}, model->placement.scheduler);
    EXPECT_TRUE(sched.is_ok()) << sched.status().to_string();
    Status s = (*sched)->alloc_graph(model->graph);
    if (s.is_ok()) s = model->set_inputs();
    if (s.is_ok()) s = (*sched)->graph_compute(model->graph);
    if (!s.is_ok()) {
        run.status = s;
        // The scheduler is reusable: the fault fired once, the same graph goes through now.
        (*sched)->reset();
        const Status again = (*sched)->alloc_graph(model->graph);
        EXPECT_TRUE(again.is_ok()) << "after '" << s.message() << "': " << again.to_string();
        if (!again.is_ok()) return run;
        EXPECT_TRUE(model->set_inputs().is_ok());
        const Status computed = (*sched)->graph_compute(model->graph);
        EXPECT_TRUE(computed.is_ok()) << computed.to_string();
    }
    run.fault_fired = fired();
    run.logits = tensor_get_f32(*model->find("result_output")).value();
    return run;
}

// Sweeps `hook` over N = 1, 2, ... on each of `devices` until N is past the device's last
// allocation or copy; returns how many runs failed.
int sweep(const std::string& hook, StatusCode expected_code, std::initializer_list<const char*> devices) {
    const FaultyRun clean = run_with_failure("SIM0", hook, 0);
    EXPECT_TRUE(clean.status.is_ok()) << clean.status.to_string();
    EXPECT_FALSE(clean.logits.empty());
    int failures = 0;
    for (const char* device : devices) {
        for (int n = 1; n <= 400; ++n) {
            SCOPED_TRACE(std::string(device) + ": " + hook + "=" + std::to_string(n));
            const FaultyRun run = run_with_failure(device, hook, n);
            if (!run.fault_fired) {
                // n is past the device's last allocation or copy: a clean run.
                EXPECT_TRUE(run.status.is_ok()) << run.status.to_string();
                EXPECT_EQ(run.logits, clean.logits);
                break;
            }
            EXPECT_LT(n, 400) << "more points than the sweep covers";
            ++failures;
            EXPECT_FALSE(run.status.is_ok()) << "the injected failure was swallowed";
            if (run.status.is_ok()) continue;
            EXPECT_EQ(run.status.code(), expected_code) << run.status.to_string();
            EXPECT_NE(run.status.message().find(hook), std::string::npos) << run.status.message();
            if (!run.logits.empty()) {
                EXPECT_EQ(run.logits, clean.logits);
            }
        }
    }
    return failures;
}

TEST(AllocationFailures, EveryAllocationPointGivesAStatusAndRecovers) {
    // Each device's weights and compute buffer at least; the CPU's input values too.
    EXPECT_GE(sweep("fail_alloc", StatusCode::OutOfMemory, {"SIM0", "SIM1", "CPU"}), 6);
}

// Copies: weights written at placement, inputs, split inputs between the devices and the CPU
// (synchronous, asynchronous on a stream, and stream to stream), and results read back.
TEST(CopyFailures, EveryCopyGivesAStatusAndRecovers) {
    EXPECT_GE(sweep("fail_copy", StatusCode::Internal, {"SIM0", "SIM1"}), 20);
}

// Each setting in `bad` is refused by `dev` with a message containing `expected`.
void expect_refused(Device& dev, std::initializer_list<const char*> bad, const std::string& expected) {
    for (const char* setting : bad) {
        const Status s = dev.configure(setting);
        EXPECT_EQ(s.code(), StatusCode::InvalidArgument) << setting;
        EXPECT_NE(s.message().find(expected), std::string::npos) << s.message();
    }
}

TEST(AllocationFailures, BadCountsAreErrors) {
    xbt::LocalRegistry local;
    Device& cpu = *local.device("CPU");
    expect_refused(cpu, {"fail_alloc=-1", "fail_alloc=x", "fail_alloc=2x"}, "index (from 1) of the allocation to fail");
    ASSERT_TRUE(cpu.configure("fail_alloc=2").is_ok());
    EXPECT_NE(cpu.settings().find("fail_alloc=2"), std::string::npos) << cpu.settings();
    EXPECT_TRUE(cpu.buffer_type().alloc_buffer(64).is_ok());
    EXPECT_EQ(cpu.buffer_type().alloc_buffer(64).status().code(), StatusCode::OutOfMemory);
    EXPECT_TRUE(cpu.buffer_type().alloc_buffer(64).is_ok()) << "once";
    EXPECT_NE(cpu.settings().find("fail_alloc=none"), std::string::npos) << cpu.settings();
}

TEST(CopyFailures, BadCountsAreErrors) {
    xbt::LocalRegistry local;
    Device& dev = *local.device("SIM0");
    expect_refused(dev, {"fail_copy=-1", "fail_copy=x", "fail_copy=1.5"}, "the index (from 1) of the copy to fail");
    EXPECT_TRUE(dev.configure("fail_copy=none").is_ok());
}

}  // namespace
}  // namespace xb::config
