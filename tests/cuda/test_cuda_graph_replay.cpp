// Replaying a graph as one captured CUDA graph (cuda/graph_replay.hpp): the key that tells when a
// replay launches exactly what the nodes would, and the policy of when to capture and replay (host
// logic, run everywhere CUDA is built); on a GPU, replays that match node-by-node launches and the
// CPU as the inputs change, error slots that still name their node, and graphs=0.
#include <gtest/gtest.h>

#include "gpu_required.hpp"

#if defined(XB_HAVE_CUDA)

#include <vector>

#include "alloc/context_alloc.hpp"
#include "backend/registry.hpp"
#include "backend/tensor_io.hpp"
#include "builtin/builtin_backends.hpp"
#include "core/context.hpp"
#include "core/ops.hpp"
#include "cuda/cuda.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/graph_replay.hpp"
#include "local_registry.hpp"
#include "test_values.hpp"

namespace xb::cuda {
namespace {

// --- the key -------------------------------------------------------------------------------------

GraphKey key_of(const std::vector<const Tensor*>& nodes) {
    GraphKey key;
    for (const Tensor* n : nodes) key.add_node(*n);
    return key;
}

TEST(CudaGraphReplay, KeyChangesWithWhatTheLaunchersRead) {
    Context ctx;
    Tensor* a = ctx.new_tensor(DType::F32, {8, 4});
    Tensor* b = ctx.new_tensor(DType::F32, {8, 4});
    Tensor* sum = add(ctx, a, b);
    Tensor* scaled = scale(ctx, sum, 0.5f);
    std::vector<float> storage(64);
    a->data = storage.data();
    b->data = storage.data() + 32;
    sum->data = storage.data();
    scaled->data = storage.data() + 32;
    const GraphKey base = key_of({sum, scaled});
    EXPECT_EQ(key_of({sum, scaled}), base);
    EXPECT_FALSE(base.empty());

    Tensor* other_scale = scale(ctx, sum, 0.25f);  // an op parameter
    other_scale->data = scaled->data;
    EXPECT_NE(key_of({sum, other_scale}), base);

    b->data = storage.data() + 16;  // a source's address
    EXPECT_NE(key_of({sum, scaled}), base);
    b->data = storage.data() + 32;
    EXPECT_EQ(key_of({sum, scaled}), base);

    b->nb[1] = b->nb[1] * 2;  // a source's strides
    EXPECT_NE(key_of({sum, scaled}), base);
    b->nb[1] = b->nb[1] / 2;

    sum->type = DType::F16;  // the node's type
    EXPECT_NE(key_of({sum, scaled}), base);
    sum->type = DType::F32;
    EXPECT_EQ(key_of({sum, scaled}), base);

    EXPECT_NE(key_of({scaled, sum}), base);  // the order of the launches
    EXPECT_NE(key_of({sum}), base);
}

// --- the policy ----------------------------------------------------------------------------------

GraphKey word_key(uint64_t w) {
    GraphKey k;
    k.add_word(w);
    return k;
}

GraphLaunch launch_of(GraphReplayPolicy& p, uint64_t w) { return p.decide(word_key(w)).launch; }

// Computes graph w twice in a row, seen once and then captured; the place it was captured at.
int seen_then_captured(GraphReplayPolicy& p, uint64_t w) {
    EXPECT_EQ(launch_of(p, w), GraphLaunch::Nodes) << "seen once: never paid a capture";
    const GraphDecision d = p.decide(word_key(w));
    EXPECT_EQ(d.launch, GraphLaunch::Capture);
    p.captured(d.place);
    return d.place;
}

TEST(CudaGraphReplay, CapturesTheSecondComputeAndReplaysFromTheThird) {
    GraphReplayPolicy p(true);
    const int place = seen_then_captured(p, 1);
    const GraphDecision replay = p.decide(word_key(1));
    EXPECT_EQ(replay.launch, GraphLaunch::Replay);
    EXPECT_EQ(replay.place, place) << "replayed from where it was captured";
    EXPECT_EQ(launch_of(p, 1), GraphLaunch::Replay);
    EXPECT_EQ(p.captures(), 1);
    EXPECT_EQ(p.replays(), 2);
}

// Two splits of a placement on one GPU take turns: each is captured at its second compute, in a
// place of its own, and both are replayed from then on.
TEST(CudaGraphReplay, GraphsThatTakeTurnsAreEachCaptured) {
    GraphReplayPolicy p(true);
    EXPECT_EQ(launch_of(p, 1), GraphLaunch::Nodes);
    EXPECT_EQ(launch_of(p, 2), GraphLaunch::Nodes);
    const GraphDecision first = p.decide(word_key(1));
    ASSERT_EQ(first.launch, GraphLaunch::Capture);
    p.captured(first.place);
    const GraphDecision second = p.decide(word_key(2));
    ASSERT_EQ(second.launch, GraphLaunch::Capture);
    p.captured(second.place);
    EXPECT_NE(first.place, second.place);
    for (int round = 0; round < 3; ++round) {
        const GraphDecision a = p.decide(word_key(1));
        const GraphDecision b = p.decide(word_key(2));
        EXPECT_EQ(a.launch, GraphLaunch::Replay);
        EXPECT_EQ(a.place, first.place);
        EXPECT_EQ(b.launch, GraphLaunch::Replay);
        EXPECT_EQ(b.place, second.place);
    }
    EXPECT_EQ(p.captures(), 2);
    EXPECT_EQ(p.replays(), 6);
}

// A graph that changes at every compute (new keys) takes the place used longest ago, so a graph
// replayed beside it stays held; one left unused for kHeldGraphs new graphs is let go.
TEST(CudaGraphReplay, NewGraphsTakeThePlaceUsedLongestAgo) {
    GraphReplayPolicy p(true);
    seen_then_captured(p, 1);
    for (uint64_t changing = 100; changing < 120; ++changing) {
        EXPECT_EQ(launch_of(p, changing), GraphLaunch::Nodes);
        EXPECT_EQ(launch_of(p, 1), GraphLaunch::Replay) << "pushed out by graph " << changing;
    }
    for (uint64_t k = 200; k < 200 + GraphReplayPolicy::kHeldGraphs; ++k) EXPECT_EQ(launch_of(p, k), GraphLaunch::Nodes);
    EXPECT_EQ(launch_of(p, 1), GraphLaunch::Nodes) << "forgotten: seen once again";
    EXPECT_EQ(launch_of(p, 1), GraphLaunch::Capture);
}

TEST(CudaGraphReplay, FailedCapturesFallBackAndFinallyTurnCapturingOff) {
    GraphReplayPolicy p(true);
    for (int i = 0; i < GraphReplayPolicy::kMaxCaptureFailures; ++i) {
        const uint64_t k = 10 + static_cast<uint64_t>(i);
        EXPECT_EQ(launch_of(p, k), GraphLaunch::Nodes);
        const GraphDecision d = p.decide(word_key(k));
        ASSERT_EQ(d.launch, GraphLaunch::Capture);
        p.capture_failed(d.place);
        EXPECT_EQ(launch_of(p, k), GraphLaunch::Nodes) << "a graph that failed is not captured again";
        EXPECT_EQ(launch_of(p, k), GraphLaunch::Nodes);
    }
    EXPECT_FALSE(p.enabled());
    EXPECT_EQ(launch_of(p, 99), GraphLaunch::Nodes);
    EXPECT_EQ(launch_of(p, 99), GraphLaunch::Nodes);
    EXPECT_EQ(p.failures(), GraphReplayPolicy::kMaxCaptureFailures);
}

TEST(CudaGraphReplay, AReplayThatCannotLaunchIsNotTriedAgain) {
    GraphReplayPolicy p(true);
    seen_then_captured(p, 5);
    const GraphDecision replay = p.decide(word_key(5));
    ASSERT_EQ(replay.launch, GraphLaunch::Replay);
    p.capture_failed(replay.place);  // the launch of the replay failed
    EXPECT_EQ(launch_of(p, 5), GraphLaunch::Nodes);
    EXPECT_EQ(launch_of(p, 5), GraphLaunch::Nodes);
    EXPECT_EQ(p.failures(), 1);
}

TEST(CudaGraphReplay, DisabledOrEmptyKeysLaunchNodeByNode) {
    GraphReplayPolicy off(false);
    EXPECT_EQ(launch_of(off, 1), GraphLaunch::Nodes);
    EXPECT_EQ(launch_of(off, 1), GraphLaunch::Nodes);
    GraphReplayPolicy on(true);
    EXPECT_EQ(on.decide(GraphKey{}).launch, GraphLaunch::Nodes);  // a graph that is never captured
    EXPECT_EQ(on.decide(GraphKey{}).launch, GraphLaunch::Nodes);
}

// --- on a GPU --------------------------------------------------------------------------------------

// A small decoder step: rows of a table picked by index (a kernel that checks its indices), a
// product, a norm, an activation and a residual; each compute with new values. q8_0 weights take
// the integer mat-vec kernels; f32 weights with 40 columns take cuBLAS.
struct Step {
    Context ctx;
    Tensor* table = nullptr;
    Tensor* rows = nullptr;
    Tensor* w = nullptr;
    Tensor* out = nullptr;
    Graph graph;
    std::unique_ptr<MultiBuffer> buffer;
    DType weights = DType::Q8_0;
    int64_t n_rows = 3;

    Status build(Backend& backend) {
        table = ctx.new_tensor(DType::F32, {64, 50});
        rows = ctx.new_tensor(DType::I32, {n_rows});
        w = ctx.new_tensor(weights, {64, 96});
        Tensor* x = get_rows(ctx, table, rows);
        x->name = "embedded";
        Tensor* h = silu(ctx, rms_norm(ctx, mul_mat(ctx, w, x), 1e-5f));
        out = add(ctx, h, h);
        out->set_output();
        XB_ASSIGN_OR_RETURN(graph, Graph::build({out}));
        XB_ASSIGN_OR_RETURN(buffer, alloc_ctx_tensors(ctx, backend));
        return tensor_set_f32(*w, xbt::uniform_values(64 * 96, 5));
    }
    Result<std::vector<float>> compute(Backend& backend, uint32_t seed, const std::vector<int32_t>& picked) {
        XB_RETURN_IF_ERROR(tensor_set_f32(*table, xbt::uniform_values(64 * 50, seed)));
        XB_RETURN_IF_ERROR(tensor_set(*rows, picked.data(), 0, picked.size() * sizeof(int32_t)));
        XB_RETURN_IF_ERROR(backend.graph_compute(graph));
        return tensor_get_f32(*out);
    }
};

double nmse(const std::vector<float>& got, const std::vector<float>& want) {
    double err = 0.0, norm = 0.0;
    for (size_t i = 0; i < want.size(); ++i) {
        err += (got[i] - want[i]) * (got[i] - want[i]);
        norm += want[i] * want[i];
    }
    return err / norm;
}

class CudaGraphReplayDevice : public ::testing::Test {
protected:
    void SetUp() override {
        const CudaAvailability available = cuda_availability();
        if (available.device_count == 0) XB_SKIP_WITHOUT_GPU("no CUDA device: " << available.reason);
    }
    xbt::LocalRegistry local_;
};

TEST_F(CudaGraphReplayDevice, ReplaysMatchTheCpuAsTheInputsChange) {
    auto gpu = local_.device("CUDA0")->init_backend();
    auto cpu = local_.device("CPU")->init_backend();
    ASSERT_TRUE(gpu.is_ok() && cpu.is_ok());
    Step on_gpu, on_cpu;
    ASSERT_TRUE(on_gpu.build(**gpu).is_ok());
    ASSERT_TRUE(on_cpu.build(**cpu).is_ok());
    for (uint32_t round = 0; round < 4; ++round) {
        const std::vector<int32_t> picked = {static_cast<int32_t>(round), 7, 49 - static_cast<int32_t>(round)};
        auto got = on_gpu.compute(**gpu, 100 + round, picked);
        auto want = on_cpu.compute(**cpu, 100 + round, picked);
        ASSERT_TRUE(got.is_ok()) << got.status().to_string();
        ASSERT_TRUE(want.is_ok()) << want.status().to_string();
        EXPECT_LE(nmse(*got, *want), 5e-4) << "round " << round;  // 8-bit activations against the CPU's
    }
    const auto& replay = dynamic_cast<CudaBackend&>(**gpu).graph_replay();
    EXPECT_EQ(replay.captures(), 1);
    EXPECT_EQ(replay.replays(), 2);
    EXPECT_EQ(replay.failures(), 0);

    // A replayed get_rows still reports an index out of range, naming its node, and then goes on.
    auto bad = on_gpu.compute(**gpu, 7, {1, 50, 2});
    ASSERT_FALSE(bad.is_ok());
    EXPECT_EQ(bad.status().code(), StatusCode::OutOfRange);
    EXPECT_NE(bad.status().message().find("embedded"), std::string::npos) << bad.status().message();
    EXPECT_EQ(replay.replays(), 3);
    EXPECT_TRUE(on_gpu.compute(**gpu, 8, {1, 2, 3}).is_ok());
}

// cuBLAS calls are captured too (the cuBLAS of CUDA 12 and later supports stream capture); were
// one not, the compute would fall back to node launches and count a failure here.
TEST_F(CudaGraphReplayDevice, CublasProductsAreCaptured) {
    auto gpu = local_.device("CUDA0")->init_backend();
    auto cpu = local_.device("CPU")->init_backend();
    ASSERT_TRUE(gpu.is_ok() && cpu.is_ok());
    Step on_gpu, on_cpu;
    on_gpu.weights = on_cpu.weights = DType::F32;
    on_gpu.n_rows = on_cpu.n_rows = 40;
    ASSERT_TRUE(on_gpu.build(**gpu).is_ok());
    ASSERT_TRUE(on_cpu.build(**cpu).is_ok());
    std::vector<int32_t> picked(40);
    for (int32_t i = 0; i < 40; ++i) picked[static_cast<size_t>(i)] = (7 * i) % 50;
    for (uint32_t round = 0; round < 3; ++round) {
        auto got = on_gpu.compute(**gpu, 200 + round, picked);
        auto want = on_cpu.compute(**cpu, 200 + round, picked);
        ASSERT_TRUE(got.is_ok() && want.is_ok());
        EXPECT_LE(nmse(*got, *want), 1e-10) << "round " << round;
    }
    const auto& replay = dynamic_cast<CudaBackend&>(**gpu).graph_replay();
    EXPECT_EQ(replay.failures(), 0);
    EXPECT_EQ(replay.captures(), 1);
    EXPECT_EQ(replay.replays(), 1);
}

// Graphs taking turns are each captured and replayed from their own place; once more graphs came
// than are held, a new capture reuses the executable graph of the one let go (cudaGraphExecUpdate,
// or a new instantiation where the update cannot take it). Every result against the CPU.
TEST_F(CudaGraphReplayDevice, GraphsTakingTurnsAndReusedPlacesMatchTheCpu) {
    auto gpu = local_.device("CUDA0")->init_backend();
    auto cpu = local_.device("CPU")->init_backend();
    ASSERT_TRUE(gpu.is_ok() && cpu.is_ok());
    constexpr size_t kGraphs = GraphReplayPolicy::kHeldGraphs + 1;
    std::vector<Step> on_gpu(kGraphs), on_cpu(kGraphs);
    for (size_t g = 0; g < kGraphs; ++g) {
        on_gpu[g].n_rows = on_cpu[g].n_rows = 3 + static_cast<int64_t>(g);  // other shapes: other keys
        ASSERT_TRUE(on_gpu[g].build(**gpu).is_ok());
        ASSERT_TRUE(on_cpu[g].build(**cpu).is_ok());
    }
    auto check = [&](size_t g, uint32_t seed) {
        std::vector<int32_t> picked;
        for (int64_t i = 0; i < on_gpu[g].n_rows; ++i) picked.push_back(static_cast<int32_t>((seed + 11 * i) % 50));
        auto got = on_gpu[g].compute(**gpu, seed, picked);
        auto want = on_cpu[g].compute(**cpu, seed, picked);
        ASSERT_TRUE(got.is_ok()) << got.status().to_string();
        ASSERT_TRUE(want.is_ok()) << want.status().to_string();
        EXPECT_LE(nmse(*got, *want), 5e-4) << "graph " << g << ", seed " << seed;
    };
    for (uint32_t round = 0; round < 4; ++round) {  // two graphs taking turns
        check(0, 300 + round);
        check(1, 400 + round);
    }
    const auto& replay = dynamic_cast<CudaBackend&>(**gpu).graph_replay();
    EXPECT_EQ(replay.captures(), 2);
    EXPECT_EQ(replay.replays(), 4);
    for (size_t g = 2; g < kGraphs; ++g) {  // the last of these takes graph 0's place
        for (uint32_t round = 0; round < 3; ++round) check(g, 500 + 10 * static_cast<uint32_t>(g) + round);
    }
    EXPECT_EQ(replay.captures(), static_cast<int>(kGraphs));
    EXPECT_EQ(replay.replays(), 4 + static_cast<int>(kGraphs - 2));
    EXPECT_EQ(replay.failures(), 0);
}

TEST_F(CudaGraphReplayDevice, GraphsOffLaunchNodeByNode) {
    auto gpu = local_.device("CUDA0")->init_backend("graphs=0");
    ASSERT_TRUE(gpu.is_ok()) << gpu.status().to_string();
    Step step;
    ASSERT_TRUE(step.build(**gpu).is_ok());
    for (uint32_t round = 0; round < 3; ++round) ASSERT_TRUE(step.compute(**gpu, round, {0, 1, 2}).is_ok());
    const auto& replay = dynamic_cast<CudaBackend&>(**gpu).graph_replay();
    EXPECT_EQ(replay.captures(), 0);
    EXPECT_EQ(replay.replays(), 0);
}

}  // namespace
}  // namespace xb::cuda

#endif  // XB_HAVE_CUDA
