// The scheduler on hand-built graphs whose right split is known by reasoning, and its results
// against the CPU alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "alloc/context_alloc.hpp"
#include "backend/registry.hpp"
#include "builtin/builtin_backends.hpp"
#include "backend/tensor_io.hpp"
#include "core/ops.hpp"
#include "sched/graph_copy.hpp"
#include "sched/scheduler.hpp"
#include "local_registry.hpp"
#include "test_values.hpp"

namespace xb {
namespace {

std::unique_ptr<Backend> init(const char* name, std::string_view params = {}) {
    auto b = global_registry().init_by_name(name, params);
    return b.is_ok() ? std::move(b).value() : nullptr;
}

bool has_device(const char* name) { return global_registry().dev_by_name(name) != nullptr; }

using xbt::LocalRegistry;

std::vector<float> random_values(size_t n, uint32_t seed) { return xbt::uniform_values(n, seed); }

// Weights placed in a weights buffer of one device.
struct Weights {
    Context ctx;
    std::vector<std::unique_ptr<MultiBuffer>> buffers;
    Tensor* make(std::initializer_list<int64_t> ne, const char* name) {
        Tensor* t = ctx.new_tensor(DType::F32, ne);
        t->name = name;
        return t;
    }
    void place(std::vector<Tensor*> tensors, Backend& backend, uint32_t seed) {
        auto buf = alloc_tensors(tensors, backend.default_buffer_type());
        ASSERT_TRUE(buf.is_ok()) << buf.status().to_string();
        (*buf)->set_usage(BufferUsage::Weights);
        for (Tensor* t : tensors) ASSERT_TRUE(tensor_set_f32(*t, random_values(static_cast<size_t>(t->nelements()), seed++)).is_ok());
        buffers.push_back(std::move(buf).value());
    }
};

// x (input) * w (weight) then 11 more element-wise ops; op 6 is rms_norm.
struct Chain {
    Context ctx;
    Tensor* x;
    std::vector<Tensor*> ops;
};

std::unique_ptr<Chain> make_chain(Tensor* w) {
    auto c = std::make_unique<Chain>();
    c->x = c->ctx.new_tensor(DType::F32, {33, 5});
    c->x->name = "x";
    c->x->set_input();
    Tensor* t = mul(c->ctx, c->x, w);
    c->ops.push_back(t);
    for (int i = 2; i <= 12; ++i) {
        t = i == 6 ? rms_norm(c->ctx, t, 1e-5f) : (i % 2 ? scale(c->ctx, t, 0.9f, 0.1f) : tanh(c->ctx, t));
        t->name = "op" + std::to_string(i);
        c->ops.push_back(t);
    }
    t->set_output();
    return c;
}

// The chain with its weight (seed 7) placed on `backend`, and its graph.
struct ChainSetup {
    Weights weights;
    std::unique_ptr<Chain> chain;
    Graph graph;
};

std::unique_ptr<ChainSetup> chain_with_weight_on(Backend& backend) {
    auto s = std::make_unique<ChainSetup>();
    Tensor* wt = s->weights.make({33, 5}, "w");
    s->weights.place({wt}, backend, 7);
    s->chain = make_chain(wt);
    s->graph = Graph::build({s->chain->ops.back()}).value();
    return s;
}

// The chain on the CPU alone with chain_with_weight_on's weight: the expected output for any input.
class CpuChainReference {
public:
    CpuChainReference() : cpu_(init("CPU")), setup_(chain_with_weight_on(*cpu_)) {
        buffer_ = alloc_ctx_tensors(setup_->chain->ctx, *cpu_).value();
    }
    std::vector<float> output_for(const std::vector<float>& input) {
        EXPECT_TRUE(tensor_set_f32(*setup_->chain->x, input).is_ok());
        EXPECT_TRUE(cpu_->graph_compute(setup_->graph).is_ok());
        return tensor_get_f32(*setup_->chain->ops.back()).value();
    }

private:
    std::unique_ptr<Backend> cpu_;
    std::unique_ptr<ChainSetup> setup_;
    std::unique_ptr<MultiBuffer> buffer_;
};

std::vector<float> compute_alone_alone(uint32_t seed) {
    auto cpu = init("CPU");
    Weights w;
    Tensor* wt = w.make({33, 5}, "w");
    w.place({wt}, *cpu, seed);
    auto chain = make_chain(wt);
    auto g = Graph::build({chain->ops.back()}).value();
    auto buf = alloc_ctx_tensors(chain->ctx, *cpu).value();
    EXPECT_TRUE(tensor_set_f32(*chain->x, random_values(165, seed + 100)).is_ok());
    EXPECT_TRUE(cpu->graph_compute(g).is_ok());
    return tensor_get_f32(*chain->ops.back()).value();
}

TEST(Scheduler, UnsupportedOpInTheMiddleGivesThreeSplits) {
    if (!has_device("SIM0")) GTEST_SKIP() << "no SIM0 device";
    LocalRegistry devices;
    devices.configure("SIM0", "unsupported=rms_norm");
    auto sim = devices.init("SIM0");
    auto cpu = devices.init("CPU");
    auto setup = chain_with_weight_on(*sim);
    auto& chain = setup->chain;
    Graph& g = setup->graph;
    auto sched = Scheduler::create({sim.get(), cpu.get()}).value();
    ASSERT_TRUE(sched->alloc_graph(g).is_ok());
    ASSERT_EQ(sched->n_splits(), 3);
    const SchedReport& r = sched->report();
    EXPECT_EQ(r.splits[0].backend, "SIM0");
    EXPECT_EQ(r.splits[1].backend, "CPU");
    EXPECT_EQ(r.splits[2].backend, "SIM0");
    EXPECT_EQ(r.splits[0].node_end - r.splits[0].node_begin, 5);
    EXPECT_EQ(r.splits[1].node_end - r.splits[1].node_begin, 1);
    // Exactly: x into SIM0, op5 into the CPU, op6 back into SIM0.
    ASSERT_EQ(r.splits[0].inputs.size(), 1u);
    EXPECT_EQ(r.splits[0].inputs[0].name, "x");
    ASSERT_EQ(r.splits[1].inputs.size(), 1u);
    EXPECT_EQ(r.splits[1].inputs[0].name, "op5");
    ASSERT_EQ(r.splits[2].inputs.size(), 1u);
    EXPECT_EQ(r.splits[2].inputs[0].name, "op6");
    EXPECT_EQ(sched->tensor_backend(*chain->ops[0]), sim.get());
    EXPECT_EQ(r.nodes[0].reason, AssignReason::Weight);
    EXPECT_EQ(sched->tensor_backend(*chain->ops[5]), cpu.get());

    ASSERT_TRUE(tensor_set_f32(*chain->x, random_values(165, 107)).is_ok());
    ASSERT_TRUE(sched->graph_compute(g).is_ok());
    // The sim computes with the CPU kernels: results are bit-identical to the CPU alone.
    EXPECT_EQ(tensor_get_f32(*chain->ops.back()).value(), compute_alone_alone(7));
    EXPECT_EQ(r.copy_bytes.at({"CPU", "SIM0"}), chain->x->nbytes() + chain->ops[5]->nbytes());
    EXPECT_EQ(r.copy_bytes.at({"SIM0", "CPU"}), chain->ops[4]->nbytes());
}

// The chain over SIM0 (rms_norm on the CPU: three splits, one 33x5 f32 input each, host <-> device)
// computed once in profiling mode, the CPU's compute buffer of `cpu_buft` (nullptr: its own).
void profile_chain(Backend& sim, Backend& cpu, BufferType* cpu_buft, const std::function<void(const SchedReport&)>& check) {
    auto setup = chain_with_weight_on(sim);
    SchedulerOptions opts;
    opts.profile = true;
    auto sched = Scheduler::create({&sim, &cpu}, {nullptr, cpu_buft}, opts).value();
    ASSERT_TRUE(sched->alloc_graph(setup->graph).is_ok());
    ASSERT_TRUE(tensor_set_f32(*setup->chain->x, random_values(165, 1)).is_ok());
    ASSERT_TRUE(sched->graph_compute(setup->graph).is_ok());
    ASSERT_TRUE(sched->graph_compute(setup->graph).is_ok());  // the figures are the last compute's, not sums
    ASSERT_EQ(sched->report().splits.size(), 3u);
    check(sched->report());
}

TEST(Scheduler, ProfileModeTimesSplitsAndModelsTheSimLink) {
    if (!has_device("SIM0")) GTEST_SKIP() << "no SIM0 device";
    LocalRegistry devices;
    devices.configure("SIM0", "unsupported=rms_norm,bandwidth_gbps=2,latency_us=100,host_buffer=1");
    auto sim = devices.init("SIM0");
    auto cpu = devices.init("CPU");
    const double bytes = 33 * 5 * 4;
    // The CPU's own memory is pageable: its copies cross at half the link (the default pageable_ratio).
    profile_chain(*sim, *cpu, nullptr, [&](const SchedReport& r) {
        for (const SplitReport& s : r.splits) {
            EXPECT_GE(s.copy_seconds, 0.0);
            EXPECT_GE(s.compute_seconds, 0.0);
            EXPECT_NEAR(s.modelled_copy_seconds, 100e-6 + bytes / 1e9, 1e-12) << "split " << s.index;
            ASSERT_EQ(s.inputs.size(), 1u);
            const SplitInputReport& in = s.inputs[0];
            EXPECT_GT(in.copy_seconds, 0.0) << "each copy is timed on its own";
            EXPECT_LE(in.copy_seconds, s.copy_seconds);
            EXPECT_GT(in.achieved_gbps(), 0.0);
            EXPECT_EQ(in.link_gbps, 2.0) << "the modelled link's bandwidth";
            EXPECT_EQ(in.host_memory, HostMemory::Pageable);
            EXPECT_NEAR(in.modelled_gbps(), bytes / (100e-6 + bytes / 1e9) * 1e-9, 1e-12);
            EXPECT_LT(in.modelled_gbps(), 0.5 * in.link_gbps);
        }
    });
    // With the CPU's compute buffer in SIM0's pinned host memory, at the link's full bandwidth.
    profile_chain(*sim, *cpu, devices.device("SIM0")->host_buffer_type(), [&](const SchedReport& r) {
        for (const SplitReport& s : r.splits) {
            EXPECT_NEAR(s.modelled_copy_seconds, 100e-6 + bytes / 2e9, 1e-12) << "split " << s.index;
            EXPECT_EQ(s.inputs[0].host_memory, HostMemory::Pinned) << "split " << s.index;
            EXPECT_LT(s.inputs[0].modelled_gbps(), s.inputs[0].link_gbps);
        }
    });
}

TEST(Scheduler, UserAssignmentIsKept) {
    if (!has_device("SIM0")) GTEST_SKIP() << "no SIM0 device";
    auto sim = init("SIM0");
    auto cpu = init("CPU");
    auto setup = chain_with_weight_on(*sim);
    auto& chain = setup->chain;
    Graph& g = setup->graph;
    auto sched = Scheduler::create({sim.get(), cpu.get()}).value();
    ASSERT_TRUE(sched->set_tensor_backend(*chain->ops[2], *cpu).is_ok());
    ASSERT_TRUE(sched->alloc_graph(g).is_ok());
    EXPECT_EQ(sched->tensor_backend(*chain->ops[2]), cpu.get());
    EXPECT_EQ(sched->report().nodes[2].reason, AssignReason::User);
    // SIM0 (op1, op2), then the CPU from op3 on: no weight on SIM0 pulls the rest back, and
    // expansion from a CPU node continues on the CPU.
    EXPECT_EQ(sched->n_splits(), 2);
    ASSERT_TRUE(tensor_set_f32(*chain->x, random_values(165, 107)).is_ok());
    ASSERT_TRUE(sched->graph_compute(g).is_ok());
    EXPECT_EQ(tensor_get_f32(*chain->ops.back()).value(), compute_alone_alone(7));
    // reset forgets it and restores the graph's sources.
    sched->reset();
    for (size_t i = 1; i < chain->ops.size(); ++i) EXPECT_EQ(chain->ops[i]->src[0], chain->ops[i - 1]);
    ASSERT_TRUE(sched->alloc_graph(g).is_ok());
    EXPECT_EQ(sched->n_splits(), 1);
}

TEST(Scheduler, BadConfigurationsAreErrors) {
    auto cpu = init("CPU");
    EXPECT_FALSE(Scheduler::create({}).is_ok());
    if (has_device("SIM0")) {
        auto sim = init("SIM0");
        auto s = Scheduler::create({cpu.get(), sim.get()});
        ASSERT_FALSE(s.is_ok());
        EXPECT_NE(s.status().message().find("last backend must be the CPU"), std::string::npos);
    }
    auto sched = Scheduler::create({cpu.get()}).value();
    auto other = init("CPU");
    Context ctx;
    Tensor* t = ctx.new_tensor(DType::F32, {4});
    EXPECT_EQ(sched->set_tensor_backend(*t, *other).code(), StatusCode::InvalidArgument);
}

TEST(Scheduler, BlasAndCpuSplitWithoutCopies) {
    if (!has_device("BLAS")) GTEST_SKIP() << "no BLAS device";
    auto blas = init("BLAS");
    auto cpu = init("CPU");
    Weights w;
    Tensor* w1 = w.make({16, 24}, "w1");
    Tensor* b1 = w.make({24}, "b1");
    Tensor* w2 = w.make({24, 16}, "w2");
    w.place({w1, b1, w2}, *cpu, 3);
    Context ctx;
    Tensor* x = ctx.new_tensor(DType::F32, {16, 8});
    x->set_input();
    Tensor* y = mul_mat(ctx, w2, silu(ctx, add(ctx, mul_mat(ctx, w1, x), b1)));
    y->set_output();
    auto g = Graph::build({y}).value();
    auto sched = Scheduler::create({blas.get(), cpu.get()}).value();
    ASSERT_TRUE(sched->alloc_graph(g).is_ok());
    EXPECT_EQ(sched->n_splits(), 3);  // BLAS (mul_mat), CPU (add, silu), BLAS (mul_mat)
    for (const SplitReport& s : sched->report().splits) EXPECT_TRUE(s.inputs.empty()) << "host memory is shared";
    EXPECT_EQ(sched->tensor_backend(*y), blas.get());
    ASSERT_TRUE(tensor_set_f32(*x, random_values(128, 9)).is_ok());
    ASSERT_TRUE(sched->graph_compute(g).is_ok());
    EXPECT_TRUE(sched->report().copy_bytes.empty());
}

TEST(Scheduler, LayersOffloadedToTwoDevicesSplitAtEachDeviceChange) {
    if (!has_device("SIM0") || !has_device("SIM1")) GTEST_SKIP() << "needs SIM0 and SIM1";
    auto sim0 = init("SIM0");
    auto sim1 = init("SIM1");
    auto cpu = init("CPU");
    Weights w;
    Context ctx;
    Tensor* x = ctx.new_tensor(DType::F32, {16, 4});
    x->set_input();
    Tensor* h = x;
    Backend* where[6] = {cpu.get(), cpu.get(), sim0.get(), sim0.get(), sim1.get(), sim1.get()};
    for (int l = 0; l < 6; ++l) {
        Tensor* wl = w.make({16, 16}, "w");
        w.place({wl}, *where[l], static_cast<uint32_t>(l));
        h = relu(ctx, mul_mat(ctx, wl, h));
    }
    h->set_output();
    auto g = Graph::build({h}).value();
    auto sched = Scheduler::create({sim0.get(), sim1.get(), cpu.get()}).value();
    ASSERT_TRUE(sched->alloc_graph(g).is_ok());
    ASSERT_EQ(sched->n_splits(), 3);
    EXPECT_EQ(sched->report().splits[0].backend, "CPU");
    EXPECT_EQ(sched->report().splits[1].backend, "SIM0");
    EXPECT_EQ(sched->report().splits[2].backend, "SIM1");
    ASSERT_TRUE(tensor_set_f32(*x, random_values(64, 5)).is_ok());
    ASSERT_TRUE(sched->graph_compute(g).is_ok());
}

TEST(Scheduler, EvalCallbackSeesTheAskedNodesInOrderAndCanCancel) {
    auto cpu = init("CPU");
    auto setup = chain_with_weight_on(*cpu);
    auto& chain = setup->chain;
    Graph& g = setup->graph;
    auto sched = Scheduler::create({cpu.get()}).value();
    ASSERT_TRUE(sched->alloc_graph(g).is_ok());
    ASSERT_TRUE(tensor_set_f32(*chain->x, random_values(165, 107)).is_ok());
    std::vector<std::string> seen;
    sched->set_eval_callback([&](Tensor& t, bool ask) {
        const bool wanted = t.name == "op3" || t.name == "op8";
        if (!ask) {
            seen.push_back(t.name);
            EXPECT_FALSE(tensor_get_f32(t).value().empty());
        }
        return ask ? wanted : true;
    });
    const Status first = sched->graph_compute(g);
    ASSERT_TRUE(first.is_ok()) << first.to_string();
    EXPECT_EQ(seen, (std::vector<std::string>{"op3", "op8"}));
    EXPECT_EQ(tensor_get_f32(*chain->ops.back()).value(), compute_alone_alone(7));

    seen.clear();
    sched->set_eval_callback([&](Tensor& t, bool ask) {
        if (ask) return t.name == "op4";
        seen.push_back(t.name);
        return false;  // stop here
    });
    Status s = sched->graph_compute(g);
    EXPECT_EQ(s.code(), StatusCode::Aborted);
    EXPECT_EQ(seen, std::vector<std::string>{"op4"});
}

TEST(Scheduler, PipelineCopiesGiveCorrectResultsEveryTime) {
    if (!has_device("SIM0")) GTEST_SKIP() << "no SIM0 device";
    LocalRegistry devices;
    devices.configure("SIM0", "unsupported=rms_norm");
    auto sim = devices.init("SIM0");
    auto cpu = devices.init("CPU");
    auto setup = chain_with_weight_on(*sim);
    auto& chain = setup->chain;
    Graph& g = setup->graph;
    SchedulerOptions opts;
    opts.n_copies = 4;
    auto sched = Scheduler::create({sim.get(), cpu.get()}, {}, opts).value();
    EXPECT_EQ(sched->n_copies(), 4);
    CpuChainReference reference;

    for (uint32_t step = 0; step < 12; ++step) {
        const auto input = random_values(165, 1000 + step);
        // A fresh split each step, as an engine that rebuilds its graph does.
        sched->reset();
        ASSERT_TRUE(sched->alloc_graph(g).is_ok());
        ASSERT_TRUE(tensor_set_f32(*chain->x, input).is_ok());
        ASSERT_TRUE(sched->graph_compute_async(g).is_ok());
        sched->synchronize();
        ASSERT_EQ(tensor_get_f32(*chain->ops.back()).value(), reference.output_for(input)) << "step " << step;
    }
}

// One allocation computed again and again with new inputs (no reset in between): the split nodes
// read the copy slot they were allocated with, so every compute must copy into that slot. Found on
// a GPU, where the second of three computes read the first one's inputs.
TEST(Scheduler, PipelineCopiesRecomputeOneAllocationCorrectly) {
    if (!has_device("SIM0")) GTEST_SKIP() << "no SIM0 device";
    LocalRegistry devices;
    devices.configure("SIM0", "unsupported=rms_norm");
    auto sim = devices.init("SIM0");
    auto cpu = devices.init("CPU");
    auto setup = chain_with_weight_on(*sim);
    auto& chain = setup->chain;
    Graph& g = setup->graph;
    SchedulerOptions opts;
    opts.n_copies = 2;
    auto sched = Scheduler::create({sim.get(), cpu.get()}, {}, opts).value();
    CpuChainReference reference;

    ASSERT_TRUE(sched->alloc_graph(g).is_ok());
    ASSERT_GT(sched->n_splits(), 1);
    for (uint32_t step = 0; step < 4; ++step) {
        const auto input = random_values(165, 2000 + step);
        ASSERT_TRUE(tensor_set_f32(*chain->x, input).is_ok());
        ASSERT_TRUE(sched->graph_compute(g).is_ok());
        ASSERT_EQ(tensor_get_f32(*chain->ops.back()).value(), reference.output_for(input)) << "step " << step;
    }
}

TEST(Scheduler, ReserveTheLargestThenSmallerGraphsAllocateNothingNew) {
    if (!has_device("SIM0")) GTEST_SKIP() << "no SIM0 device";
    auto sim = init("SIM0");
    auto cpu = init("CPU");
    auto sched = Scheduler::create({sim.get(), cpu.get()}).value();
    auto build = [&](Context& ctx, int64_t n) {
        Tensor* x = ctx.new_tensor(DType::F32, {n, 4});
        x->set_input();
        Tensor* y = silu(ctx, scale(ctx, x, 2.0f));
        y->set_output();
        return Graph::build({y}).value();
    };
    Context big_ctx;
    Graph big = build(big_ctx, 4096);
    ASSERT_TRUE(sched->reserve(big).is_ok());
    const size_t cpu_size = sched->buffer_size(*cpu);
    EXPECT_GT(cpu_size, 0u);
    for (int64_t n : {100, 2048, 7}) {
        Context ctx;
        Graph g = build(ctx, n);
        ASSERT_TRUE(sched->alloc_graph(g).is_ok());
        EXPECT_EQ(sched->buffer_size(*cpu), cpu_size) << "no new memory for a smaller graph";
        sched->reset();
    }
    // Moving the nodes to SIM0 changes their buffer type: SIM0 gets a compute buffer.
    Context ctx;
    Graph g = build(ctx, 100);
    for (Tensor* n : g.nodes()) ASSERT_TRUE(sched->set_tensor_backend(*n, *sim).is_ok());
    ASSERT_TRUE(sched->alloc_graph(g).is_ok());
    EXPECT_GT(sched->buffer_size(*sim), 0u);
    sched->reset();  // ctx dies before the scheduler: hand its tensors back first
}

// The chain on the CPU, its input set, against SIM0 with `settings`: a comparison's two sides.
struct ComparePair {
    explicit ComparePair(std::string_view settings) {
        devices.configure("SIM0", settings);
        cpu = devices.init("CPU");
        sim = devices.init("SIM0");
        setup = chain_with_weight_on(*cpu);
        buffer = alloc_ctx_tensors(setup->chain->ctx, *cpu).value();
        EXPECT_TRUE(tensor_set_f32(*setup->chain->x, random_values(165, 3)).is_ok());
    }
    LocalRegistry devices;
    std::unique_ptr<Backend> cpu, sim;
    std::unique_ptr<ChainSetup> setup;
    std::unique_ptr<MultiBuffer> buffer;
};

// What a comparison saw of each node, in graph order.
struct Walk {
    std::vector<int> index;
    std::vector<bool> supported;
    std::vector<bool> same;  // t2 equals t1 bit for bit
};

TEST(CompareGraphBackend, FaultOnNodeKIsTheFirstDivergence) {
    if (!has_device("SIM0")) GTEST_SKIP() << "no SIM0 device";
    // By name: compare_graph_backend computes one node at a time, so indices restart at 0.
    ComparePair p("fault_node=op5");
    Graph& g = p.setup->graph;
    int first_divergent = -1;
    int compared = 0;
    ASSERT_TRUE(compare_graph_backend(*p.cpu, *p.sim, g, [&](int i, const Tensor& a, const Tensor& b) {
                    ++compared;
                    if (tensor_get_f32(a).value() != tensor_get_f32(b).value() && first_divergent < 0) first_divergent = i;
                    return true;
                }).is_ok());
    EXPECT_EQ(compared, g.n_nodes());
    EXPECT_EQ(first_divergent, 4);
}

TEST(CompareGraphBackend, CallbackCanStopTheWalk) {
    auto cpu = init("CPU");
    auto cpu2 = init("CPU");
    auto setup = chain_with_weight_on(*cpu);
    auto& chain = setup->chain;
    Graph& g = setup->graph;
    auto buf = alloc_ctx_tensors(chain->ctx, *cpu).value();
    ASSERT_TRUE(tensor_set_f32(*chain->x, random_values(165, 3)).is_ok());
    int calls = 0;
    ASSERT_TRUE(compare_graph_backend(*cpu, *cpu2, g, [&](int, const Tensor& a, const Tensor& b) {
                    EXPECT_EQ(tensor_get_f32(a).value(), tensor_get_f32(b).value());
                    return ++calls < 3;
                }).is_ok());
    EXPECT_EQ(calls, 3);
}


TEST(CompareGraphBackend, NodesTheTargetDoesNotSupportAreSkippedAndCarried) {
    if (!has_device("SIM0")) GTEST_SKIP() << "no SIM0 device";
    ComparePair p("unsupported=rms_norm");
    Walk walk;
    ASSERT_TRUE(compare_graph_backend(*p.cpu, *p.sim, p.setup->graph, {.skip_unsupported = true}, [&](const NodeComparison& n) {
                    walk.index.push_back(n.index);
                    walk.supported.push_back(n.supported);
                    walk.same.push_back(tensor_get_f32(*n.t1).value() == tensor_get_f32(*n.t2).value());
                    EXPECT_EQ(static_cast<bool>(n.recompute_from_reference), n.supported);
                    return true;
                }).is_ok());
    ASSERT_EQ(walk.index.size(), 12u);
    for (size_t i = 0; i < walk.index.size(); ++i) {
        EXPECT_EQ(walk.supported[i], p.setup->graph.node(walk.index[i])->op != Op::RmsNorm) << i;
        EXPECT_TRUE(walk.same[i]) << "the rms_norm is carried over, so every node matches: " << i;
    }
    // Without skipping, SIM0 is handed the rms_norm and refuses it.
    EXPECT_EQ(compare_graph_backend(*p.cpu, *p.sim, p.setup->graph, {}, [](const NodeComparison&) { return true; }).code(),
              StatusCode::NotSupported);
}

// A fault on op5: propagated, op5 and every node after it differ, and each of those computed again
// from the CPU's inputs matches again except op5; isolated, op5 alone differs.
TEST(CompareGraphBackend, IsolateAndRecomputeTellTheFaultyNode) {
    if (!has_device("SIM0")) GTEST_SKIP() << "no SIM0 device";
    ComparePair p("fault_node=op5");
    for (const bool isolate : {false, true}) {
        SCOPED_TRACE(isolate ? "isolated" : "propagated");
        std::vector<std::string> differ, made;
        ASSERT_TRUE(compare_graph_backend(*p.cpu, *p.sim, p.setup->graph, {.isolate = isolate}, [&](const NodeComparison& n) {
                        if (tensor_get_f32(*n.t1).value() == tensor_get_f32(*n.t2).value()) return true;
                        differ.push_back(n.t1->name);
                        const Tensor* again = n.recompute_from_reference().value();
                        if (tensor_get_f32(*again).value() != tensor_get_f32(*n.t1).value()) made.push_back(n.t1->name);
                        return true;
                    }).is_ok());
        EXPECT_EQ(made, std::vector<std::string>{"op5"});
        if (isolate) {
            EXPECT_EQ(differ, std::vector<std::string>{"op5"});
        } else {
            EXPECT_EQ(differ.size(), 8u) << "op5 to op12";
        }
    }
}

// The chain split over SIM0 and the CPU (SIM0 refuses rms_norm), read node by node against the CPU
// alone: every node is seen once, where the scheduler put it, and a fault on op8 (on SIM0, in the
// third split) is the first difference.
TEST(CompareGraphScheduled, EveryNodeIsReadWhereItRuns) {
    if (!has_device("SIM0")) GTEST_SKIP() << "no SIM0 device";
    LocalRegistry devices;
    devices.configure("SIM0", "unsupported=rms_norm,fault_node=op8");
    auto sim = devices.init("SIM0");
    auto cpu = devices.init("CPU");
    auto alone = devices.init("CPU");
    auto placed = chain_with_weight_on(*sim);
    auto reference = chain_with_weight_on(*alone);
    auto ref_buf = alloc_ctx_tensors(reference->chain->ctx, *alone).value();
    auto sched = Scheduler::create({sim.get(), cpu.get()}).value();
    ASSERT_TRUE(sched->alloc_graph(placed->graph).is_ok());
    ASSERT_EQ(sched->n_splits(), 3);
    const auto input = random_values(165, 4);
    ASSERT_TRUE(tensor_set_f32(*placed->chain->x, input).is_ok());
    ASSERT_TRUE(tensor_set_f32(*reference->chain->x, input).is_ok());
    std::vector<std::string> seen, on_cpu;
    std::string first_difference;
    ASSERT_TRUE(compare_graph_scheduled(*alone, reference->graph, *sched, placed->graph, [&](const NodeComparison& n) {
                    EXPECT_EQ(n.t1->name, n.t2->name);
                    EXPECT_FALSE(n.recompute_from_reference);
                    seen.push_back(n.t1->name);
                    if (sched->tensor_backend(*n.t2) == cpu.get()) on_cpu.push_back(n.t2->name);
                    if (first_difference.empty() && tensor_get_f32(*n.t1).value() != tensor_get_f32(*n.t2).value()) {
                        first_difference = n.t1->name;
                    }
                    return true;
                }).is_ok());
    EXPECT_EQ(seen.size(), 12u);
    EXPECT_EQ(on_cpu, std::vector<std::string>{"op6"});
    EXPECT_EQ(first_difference, "op8");
    // Stopping through the callback is not an error, and the eval callback is gone afterwards.
    int calls = 0;
    EXPECT_TRUE(compare_graph_scheduled(*alone, reference->graph, *sched, placed->graph,
                                        [&](const NodeComparison&) { return ++calls < 2; })
                    .is_ok());
    EXPECT_EQ(calls, 2);
    EXPECT_TRUE(sched->graph_compute(placed->graph).is_ok());
    sched->reset();
}

// A graph that writes into one leaf (a cache) and reads another (a weight): the copy shares the
// weight and copies the cache, so that computing the copy leaves the original's cache alone.
TEST(GraphCopy, SharesOnlyTheLeafsNoNodeWrites) {
    auto cpu = init("CPU");
    Context ctx;
    Tensor* w = ctx.new_tensor(DType::F32, {8, 4});
    Tensor* cache = ctx.new_tensor(DType::F32, {8, 4});
    Tensor* x = ctx.new_tensor(DType::F32, {8, 4});
    x->set_input();
    Tensor* stored = cpy(ctx, scale(ctx, x, 2.0f), cache);
    Tensor* out = add(ctx, stored, w);
    out->set_output();
    Graph g = Graph::build({out}).value();
    auto buf = alloc_ctx_tensors(ctx, *cpu).value();
    ASSERT_TRUE(tensor_set_f32(*w, random_values(32, 1)).is_ok());
    ASSERT_TRUE(tensor_set_f32(*cache, std::vector<float>(32, 0.0f)).is_ok());
    ASSERT_TRUE(tensor_set_f32(*x, random_values(32, 2)).is_ok());
    GraphCopy copy = graph_copy(*cpu, g, {.share_read_only_leafs = true}).value();
    const auto shared = [&](const Tensor* t) {
        const auto& leafs = copy.graph.leafs();
        return std::find(leafs.begin(), leafs.end(), t) != leafs.end();
    };
    EXPECT_TRUE(shared(w));
    EXPECT_FALSE(shared(cache));
    EXPECT_TRUE(shared(x)) << "an input no node writes is shared as well";
    ASSERT_TRUE(cpu->graph_compute(copy.graph).is_ok());
    EXPECT_EQ(tensor_get_f32(*cache).value(), std::vector<float>(32, 0.0f));
}

}  // namespace
}  // namespace xb
