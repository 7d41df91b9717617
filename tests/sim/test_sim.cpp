// The simulated discrete device (lib/sim): settings, device memory that the host cannot read, the
// asynchronous stream, events across devices, the modelled copy cost and fault injection. The
// generic conformance and op suites run on SIM0 and SIM1 through the registry as well.
#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <future>
#include <numeric>
#include <unordered_map>
#include <vector>

#include "alloc/context_alloc.hpp"
#include "alloc/linear_allocator.hpp"
#include "backend/modelled_link.hpp"
#include "backend/registry.hpp"
#include "builtin/builtin_backends.hpp"
#include "backend/tensor_io.hpp"
#include "core/ops.hpp"
#include "core/quant.hpp"
#include "sim/sim_backend.hpp"
#include "sim/sim_device.hpp"
#include "sim/sim_fault.hpp"

namespace xb {
namespace {

using sim::SimBackend;
using sim::SimDevice;

// Fresh SIM0/SIM1 devices in a registry of their own, for tests that change device settings or
// count device-wide statistics. Declare it before the buffers made from it.
struct LocalSim {
    LocalSim() { sim::register_sim_backend(registry); }
    SimDevice& dev(size_t i) const { return dynamic_cast<SimDevice&>(registry.dev(i)); }
    Registry registry;
};

std::unique_ptr<Backend> init(Device& device, std::string_view params = {}) {
    auto b = device.init_backend(params);
    EXPECT_TRUE(b.is_ok()) << b.status().to_string();
    return b.is_ok() ? std::move(b).value() : nullptr;
}

SimBackend& as_sim(Backend& backend) { return dynamic_cast<SimBackend&>(backend); }

std::vector<float> ramp(size_t n, float start, float step = 0.5f) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = start + step * static_cast<float>(i);
    return v;
}

// Blocks a stream until opened: makes "the stream has not got there yet" certain.
class Gate {
public:
    void block(SimBackend& backend) {
        backend.stream().enqueue([opened = opened_] {
            opened.wait();
            return Status::ok();
        });
    }
    void open() { promise_.set_value(); }

private:
    std::promise<void> promise_;
    std::shared_future<void> opened_ = promise_.get_future().share();
};

// --- the device --------------------------------------------------------------------------------

TEST(SimDevice, IsARegisteredGpuLabelledAsASimulator) {
    for (const char* name : {"SIM0", "SIM1"}) {
        Device* dev = global_registry().dev_by_name(name);
        ASSERT_NE(dev, nullptr) << name;
        EXPECT_EQ(dev->type(), DeviceType::GPU);
        EXPECT_NE(dev->description().find("simulated"), std::string::npos);
        EXPECT_NE(dev->description().find("not real hardware"), std::string::npos);
        const DeviceCaps caps = dev->caps();
        EXPECT_TRUE(caps.async);
        EXPECT_TRUE(caps.events);
        EXPECT_FALSE(caps.host_buffer);
        EXPECT_FALSE(caps.buffer_from_host_ptr);
        EXPECT_EQ(dev->host_buffer_type(), nullptr);
        EXPECT_FALSE(dev->buffer_from_host_ptr(nullptr, 0, 0).is_ok());
        EXPECT_STREQ(dev->buffer_type().name(), name);
        EXPECT_FALSE(dev->buffer_type().is_host());
        EXPECT_EQ(dev->buffer_type().alignment(), 256u);
        EXPECT_FALSE(dev->supports_buft(global_registry().dev_by_name("CPU")->buffer_type()))
            << "a discrete device cannot read host buffers";
        auto backend = init(*dev);
        ASSERT_NE(backend, nullptr);
        EXPECT_STREQ(backend->name(), name);
        EXPECT_FALSE(backend->offload_op(*Context().new_tensor(DType::F32, {4})));
    }
    EXPECT_NE(global_registry().dev_by_name("SIM0"), global_registry().dev_by_name("SIM1"));
}

TEST(SimDevice, SettingsHaveDefaultsAndRoundTrip) {
    LocalSim sim;
    SimDevice& dev = sim.dev(0);
    EXPECT_EQ(dev.settings(), "memory=4G,host_buffer=0,offload_min_batch=0,unsupported=none,threads=1,bandwidth_gbps=16,latency_us=10,"
                              "pageable_ratio=0.5,peer_bandwidth_gbps=32,peer_latency_us=5,fault_node=none,fault_size=0.5,"
                              "fail_alloc=none,fail_copy=none");
    ASSERT_TRUE(dev.configure("memory=512M,host_buffer=1,offload_min_batch=16,unsupported=rope,get_rows,silu,threads=2,bandwidth_gbps=12.5,"
                              "latency_us=0.5,pageable_ratio=0.25,peer_bandwidth_gbps=100,peer_latency_us=1.5,"
                              "fault_node=ffn_out,fault_size=0.001")
                    .is_ok());
    const std::string changed = dev.settings();
    EXPECT_EQ(changed, "memory=512M,host_buffer=1,offload_min_batch=16,unsupported=rope+get_rows+silu,threads=2,bandwidth_gbps=12.5,latency_us=0.5,"
                       "pageable_ratio=0.25,peer_bandwidth_gbps=100,peer_latency_us=1.5,fault_node=ffn_out,fault_size=0.001,"
                       "fail_alloc=none,fail_copy=none");
    // What settings() prints is accepted back, by this parser and by the generic one.
    EXPECT_TRUE(parse_device_params(changed).is_ok());
    ASSERT_TRUE(sim.dev(1).configure(changed).is_ok());
    EXPECT_EQ(sim.dev(1).settings(), changed);
    ASSERT_TRUE(dev.configure("unsupported=none,fault_node=none,memory=1536K").is_ok());
    EXPECT_EQ(dev.settings(), "memory=1536K,host_buffer=1,offload_min_batch=16,unsupported=none,threads=2,bandwidth_gbps=12.5,latency_us=0.5,"
                              "pageable_ratio=0.25,peer_bandwidth_gbps=100,peer_latency_us=1.5,fault_node=none,fault_size=0.001,"
                              "fail_alloc=none,fail_copy=none");
}

TEST(SimDevice, BadSettingsAreInvalidArgumentAndChangeNothing) {
    LocalSim sim;
    SimDevice& dev = sim.dev(0);
    const std::string before = dev.settings();
    for (const char* bad : {"colour=blue", "memory=abc", "memory=0", "memory=12X", "memory=99999999999T", "threads=0",
                            "threads=two", "bandwidth_gbps=-1", "bandwidth_gbps=inf", "latency_us=-3", "peer_bandwidth_gbps=0",
                            "peer_latency_us=-1", "fault_size=2", "fault_size=-0.1", "fault_size=x", "fault_size=0",
                            "host_buffer=yes", "host_buffer=2", "offload_min_batch=-1", "pageable_ratio=0", "pageable_ratio=1.5",
                            "pageable_ratio=nan",
                            "unsupported=rope,nope", "threads", "=3", "memory=1M,colour=blue"}) {
        const Status s = dev.configure(bad);
        EXPECT_EQ(s.code(), StatusCode::InvalidArgument) << bad;
        EXPECT_NE(s.message().find("SIM0"), std::string::npos) << s.message();
        auto backend = dev.init_backend(bad);
        EXPECT_FALSE(backend.is_ok()) << bad;
    }
    const Status unknown = dev.configure("colour=blue");
    EXPECT_NE(unknown.message().find("known keys: memory, host_buffer, offload_min_batch, unsupported, threads, bandwidth_gbps, latency_us, "
                                     "pageable_ratio, peer_bandwidth_gbps, peer_latency_us, fault_node"),
              std::string::npos)
        << unknown.message();
    EXPECT_EQ(dev.settings(), before);
}

TEST(SimDevice, UnsupportedSettingIsReflectedInSupportsOp) {
    LocalSim sim;
    SimDevice& dev = sim.dev(0);
    Context ctx;
    Tensor* x = ctx.new_tensor(DType::F32, {8, 4, 2});
    Tensor* pos = ctx.new_tensor(DType::I32, {2});
    Tensor* rows = ctx.new_tensor(DType::I32, {3, 2});
    RopeParams rp;
    rp.n_dims = 8;
    Tensor* roped = rope(ctx, x, pos, rp);
    Tensor* gathered = get_rows(ctx, x, rows);
    Tensor* activated = silu(ctx, x);
    Tensor* rectified = relu(ctx, x);
    Tensor* sum = add(ctx, x, x);
    ASSERT_TRUE(ctx.ok()) << ctx.status().to_string();
    for (Tensor* t : {roped, gathered, activated, rectified, sum}) EXPECT_TRUE(dev.supports_op(*t)) << t->op_label();

    ASSERT_TRUE(dev.configure("unsupported=rope,get_rows,silu").is_ok());
    EXPECT_FALSE(dev.supports_op(*roped));
    EXPECT_FALSE(dev.supports_op(*gathered));
    EXPECT_FALSE(dev.supports_op(*activated)) << "a unary sub-op can be refused alone";
    EXPECT_TRUE(dev.supports_op(*rectified));
    EXPECT_TRUE(dev.supports_op(*sum));
    auto backend = init(dev);
    EXPECT_FALSE(backend->supports_op(*roped));
    EXPECT_TRUE(sim.dev(1).supports_op(*roped)) << "settings are per device";

    // Computing a refused op anyway is NotSupported, naming the node.
    roped->name = "the_rope";
    auto g = Graph::build({roped});
    ASSERT_TRUE(g.is_ok());
    auto buf = alloc_ctx_tensors(ctx, *backend);
    ASSERT_TRUE(buf.is_ok()) << buf.status().to_string();
    const Status refused = backend->graph_compute(*g);
    EXPECT_EQ(refused.code(), StatusCode::NotSupported);
    EXPECT_NE(refused.message().find("the_rope"), std::string::npos) << refused.message();

    ASSERT_TRUE(dev.configure("unsupported=unary").is_ok());
    EXPECT_FALSE(dev.supports_op(*rectified));
    EXPECT_TRUE(dev.supports_op(*roped));

    // The op set is the device's: a backend made with the key sets it for every stream.
    auto other = init(dev, "unsupported=add");
    ASSERT_NE(other, nullptr);
    EXPECT_FALSE(backend->supports_op(*sum));
    EXPECT_NE(dev.settings().find("unsupported=add"), std::string::npos);
}

// --- memory ------------------------------------------------------------------------------------

TEST(SimDevice, MemoryLimitIsEnforcedAndFreedBuffersGiveMemoryBack) {
    LocalSim sim;
    SimDevice& dev = sim.dev(0);
    ASSERT_TRUE(dev.configure("memory=1M").is_ok());
    EXPECT_EQ(dev.memory().total, size_t{1} << 20);
    EXPECT_EQ(dev.memory().free, size_t{1} << 20);

    auto too_big = dev.buffer_type().alloc_buffer(size_t{2} << 20);
    ASSERT_FALSE(too_big.is_ok());
    EXPECT_EQ(too_big.status().code(), StatusCode::OutOfMemory);
    EXPECT_NE(too_big.status().message().find("2097152"), std::string::npos) << too_big.status().message();
    EXPECT_NE(too_big.status().message().find("1048576"), std::string::npos) << too_big.status().message();

    auto half = dev.buffer_type().alloc_buffer(512 << 10);
    ASSERT_TRUE(half.is_ok()) << half.status().to_string();
    EXPECT_EQ(dev.memory().free, size_t{512} << 10);
    EXPECT_EQ(global_registry().dev_by_name("SIM0")->memory().free, global_registry().dev_by_name("SIM0")->memory().total)
        << "another device's memory is untouched";
    auto more = dev.buffer_type().alloc_buffer(768 << 10);
    ASSERT_FALSE(more.is_ok());
    EXPECT_EQ(more.status().code(), StatusCode::OutOfMemory);
    EXPECT_EQ(dev.configure("memory=256K").code(), StatusCode::InvalidArgument) << "below what live buffers hold";
    EXPECT_EQ(dev.memory().total, size_t{1} << 20);

    half.value().reset();  // destroys the buffer
    EXPECT_EQ(dev.memory().free, size_t{1} << 20);
    auto again = dev.buffer_type().alloc_buffer(768 << 10);
    EXPECT_TRUE(again.is_ok()) << again.status().to_string();

    // A context too large for the device fails as a whole.
    Context ctx;
    ctx.new_tensor(DType::F32, {1 << 19});
    auto placed = alloc_ctx_tensors(ctx, dev.buffer_type());
    EXPECT_EQ(placed.status().code(), StatusCode::OutOfMemory);
}

// GCC says so with macros, clang with __has_feature.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define XB_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define XB_TEST_SANITIZED 1
#endif
#endif
#ifndef XB_TEST_SANITIZED
#define XB_TEST_SANITIZED 0
#endif

// tensor->data of a sim tensor is a device address: reading it from the host faults.
float read_from_host(const Tensor& t) { return *static_cast<const volatile float*>(t.data); }

TEST(SimDeathTest, HostDereferenceOfADeviceAddressFaults) {
    testing::FLAGS_gtest_death_test_style = "threadsafe";
    Device& dev = *global_registry().dev_by_name("SIM0");
    Context ctx;
    Tensor* t = ctx.new_tensor(DType::F32, {64});
    auto buf = alloc_ctx_tensors(ctx, dev.buffer_type());
    ASSERT_TRUE(buf.is_ok()) << buf.status().to_string();
    ASSERT_EQ((*buf)->parts().size(), 1u);
    EXPECT_EQ((*buf)->parts().front()->base(), t->data);
    const std::vector<float> values = ramp(64, 1.0f);
    ASSERT_TRUE(tensor_set_f32(*t, values).is_ok());
    auto back = tensor_get_f32(*t);
    ASSERT_TRUE(back.is_ok());
    EXPECT_EQ(*back, values) << "set/get reach the bytes that the host cannot read directly";
#if XB_TEST_SANITIZED
    EXPECT_DEATH(read_from_host(*t), "SEGV on unknown address");  // the sanitizer reports the fault
#else
    EXPECT_EXIT(read_from_host(*t), testing::KilledBySignal(SIGSEGV), "");
#endif
}

// --- the stream --------------------------------------------------------------------------------

// y = (x + x) * 0.25 + 3 on a 64-element x, in a buffer of `backend`.
struct HalfPlusThree {
    explicit HalfPlusThree(Backend& backend) {
        x = ctx.new_tensor(DType::F32, {64});
        y = scale(ctx, add(ctx, x, x), 0.25f, 3.0f);
        auto g = Graph::build({y});
        auto b = alloc_ctx_tensors(ctx, backend);
        EXPECT_TRUE(g.is_ok() && b.is_ok());
        graph = std::move(g).value();
        buffer = std::move(b).value();
    }
    Context ctx;
    Tensor* x;
    Tensor* y;
    Graph graph;
    std::unique_ptr<MultiBuffer> buffer;
};

TEST(SimBackend, WorkIsQueuedAndReturnsBeforeItRuns) {
    auto backend = init(*global_registry().dev_by_name("SIM0"));
    HalfPlusThree f(*backend);
    const std::vector<float> in = ramp(64, -8.0f);
    std::vector<float> out(64, -1.0f);
    Gate gate;
    gate.block(as_sim(*backend));
    ASSERT_TRUE(tensor_set_async(*backend, *f.x, in.data(), 0, f.x->nbytes()).is_ok());
    ASSERT_TRUE(backend->graph_compute_async(f.graph).is_ok());
    ASSERT_TRUE(tensor_get_async(*backend, *f.y, out.data(), 0, f.y->nbytes()).is_ok());
    // Every call returned while the stream is held at the gate: nothing has run.
    EXPECT_EQ(out, std::vector<float>(64, -1.0f));
    gate.open();
    backend->synchronize();
    for (size_t i = 0; i < 64; ++i) EXPECT_EQ(out[i], in[i] * 0.5f + 3.0f) << i;
}

TEST(SimBackend, ALongQueueRunsInOrder) {
    auto backend = init(*global_registry().dev_by_name("SIM1"));
    HalfPlusThree f(*backend);
    Context copy_ctx;
    Tensor* y_copy = copy_ctx.new_tensor(DType::F32, {64});
    auto copy_buf = alloc_ctx_tensors(copy_ctx, *backend);
    ASSERT_TRUE(copy_buf.is_ok());
    constexpr int kRounds = 300;
    std::vector<std::vector<float>> in(kRounds), out(kRounds, std::vector<float>(64)), copied = out;
    for (int r = 0; r < kRounds; ++r) {
        in[r] = ramp(64, static_cast<float>(r), 0.25f);
        ASSERT_TRUE(tensor_set_async(*backend, *f.x, in[r].data(), 0, f.x->nbytes()).is_ok());
        ASSERT_TRUE(backend->graph_compute_async(f.graph).is_ok());
        ASSERT_TRUE(tensor_get_async(*backend, *f.y, out[r].data(), 0, f.y->nbytes()).is_ok());
        ASSERT_TRUE(tensor_copy_async(*backend, *backend, *f.y, *y_copy).is_ok());
        ASSERT_TRUE(tensor_get_async(*backend, *y_copy, copied[r].data(), 0, y_copy->nbytes()).is_ok());
    }
    backend->synchronize();
    for (int r = 0; r < kRounds; ++r) {
        for (size_t i = 0; i < 64; ++i) {
            ASSERT_EQ(out[r][i], in[r][i] * 0.5f + 3.0f) << "round " << r << " element " << i;
            ASSERT_EQ(copied[r][i], out[r][i]) << "round " << r << " element " << i;
        }
    }
}

TEST(SimBackend, ComputeErrorsAreReportedByGraphComputeAndDoNotStick) {
    auto backend = init(*global_registry().dev_by_name("SIM0"));
    Context ctx;
    Tensor* a = ctx.new_tensor(DType::F32, {4, 3});
    Tensor* idx = ctx.new_tensor(DType::I32, {2});
    Tensor* rows = get_rows(ctx, a, idx);
    auto g = Graph::build({rows});
    ASSERT_TRUE(g.is_ok());
    auto buf = alloc_ctx_tensors(ctx, *backend);
    ASSERT_TRUE(buf.is_ok());
    ASSERT_TRUE(tensor_set_f32(*a, ramp(12, 0.0f)).is_ok());
    const std::vector<int32_t> bad = {0, 9}, good = {2, 0};
    ASSERT_TRUE(tensor_set(*idx, bad.data(), 0, sizeof(int32_t) * 2).is_ok());
    // Queued: the error appears when the work has run.
    ASSERT_TRUE(backend->graph_compute_async(*g).is_ok());
    backend->synchronize();
    const Status queued = backend->take_async_error();
    EXPECT_EQ(queued.code(), StatusCode::OutOfRange) << queued.to_string();
    EXPECT_NE(queued.message().find("SIM0"), std::string::npos) << queued.message();
    EXPECT_TRUE(backend->take_async_error().is_ok()) << "taking the error clears it";
    const Status direct = backend->graph_compute(*g);
    EXPECT_EQ(direct.code(), StatusCode::OutOfRange) << direct.to_string();

    ASSERT_TRUE(tensor_set(*idx, good.data(), 0, sizeof(int32_t) * 2).is_ok());
    ASSERT_TRUE(backend->graph_compute(*g).is_ok());
    auto out = tensor_get_f32(*rows);
    ASSERT_TRUE(out.is_ok());
    EXPECT_EQ(*out, (std::vector<float>{4.0f, 4.5f, 5.0f, 5.5f, 0.0f, 0.5f, 1.0f, 1.5f}));
}

TEST(SimBackend, TensorsOutsideTheDeviceOrUnallocatedAreErrors) {
    auto backend = init(*global_registry().dev_by_name("SIM0"));
    auto cpu = global_registry().init_by_name("CPU");
    ASSERT_TRUE(cpu.is_ok());
    Context ctx;
    Tensor* host_x = ctx.new_tensor(DType::F32, {16});
    host_x->name = "host_x";
    Tensor* y = relu(ctx, host_x);
    auto g = Graph::build({y});
    ASSERT_TRUE(g.is_ok());
    const Status unallocated = backend->graph_compute(*g);
    EXPECT_EQ(unallocated.code(), StatusCode::InvalidArgument);
    EXPECT_NE(unallocated.message().find("not allocated"), std::string::npos) << unallocated.message();

    auto host_buf = (*cpu)->alloc_buffer(256);
    auto sim_buf = backend->alloc_buffer(256);
    ASSERT_TRUE(host_buf.is_ok() && sim_buf.is_ok());
    ASSERT_TRUE(LinearAllocator(**sim_buf).alloc(*y).is_ok());
    const Status src_unallocated = backend->graph_compute(*g);
    EXPECT_EQ(src_unallocated.code(), StatusCode::InvalidArgument);
    EXPECT_NE(src_unallocated.message().find("source 'host_x'"), std::string::npos) << src_unallocated.message();
    ASSERT_TRUE(LinearAllocator(**host_buf).alloc(*host_x).is_ok());
    const Status host_memory = backend->graph_compute(*g);
    EXPECT_EQ(host_memory.code(), StatusCode::InvalidArgument);
    EXPECT_NE(host_memory.message().find("'host_x' is in CPU memory"), std::string::npos) << host_memory.message();

    // A plan belongs to the backend that made it.
    auto other = init(*global_registry().dev_by_name("SIM0"));
    Context ok_ctx;
    Tensor* z = relu(ok_ctx, ok_ctx.new_tensor(DType::F32, {4}));
    auto g2 = Graph::build({z});
    auto buf2 = alloc_ctx_tensors(ok_ctx, *backend);
    ASSERT_TRUE(g2.is_ok() && buf2.is_ok());
    auto plan = backend->graph_plan_create(*g2);
    ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
    EXPECT_EQ(other->graph_plan_compute(**plan).code(), StatusCode::InvalidArgument);
    EXPECT_TRUE(backend->graph_plan_compute(**plan).is_ok());
}

TEST(SimBackend, MoreThreadsComputeTheSameResult) {
#if defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "libgomp is not instrumented for ThreadSanitizer: the sim runs one OpenMP thread under TSan";
#endif
    auto one = init(*global_registry().dev_by_name("SIM0"));
    auto two = init(*global_registry().dev_by_name("SIM0"), "threads=2");
    ASSERT_TRUE(one && two);
    EXPECT_EQ(as_sim(*two).settings().threads, 2);
    std::vector<std::vector<float>> results;
    for (Backend* b : {one.get(), two.get()}) {
        Context ctx;
        Tensor* a = ctx.new_tensor(DType::F32, {33, 17});
        Tensor* x = ctx.new_tensor(DType::F32, {33, 5});
        Tensor* y = mul_mat(ctx, a, x);
        auto g = Graph::build({y});
        auto buf = alloc_ctx_tensors(ctx, *b);
        ASSERT_TRUE(g.is_ok() && buf.is_ok());
        ASSERT_TRUE(tensor_set_f32(*a, ramp(33 * 17, -1.0f, 0.01f)).is_ok());
        ASSERT_TRUE(tensor_set_f32(*x, ramp(33 * 5, 0.5f, -0.02f)).is_ok());
        ASSERT_TRUE(b->graph_compute(*g).is_ok());
        results.push_back(tensor_get_f32(*y).value());
    }
    ASSERT_EQ(results[0].size(), results[1].size());
    for (size_t i = 0; i < results[0].size(); ++i) EXPECT_NEAR(results[0][i], results[1][i], 1e-4f) << i;
    EXPECT_TRUE(one->set_n_threads(1));
    EXPECT_FALSE(one->set_n_threads(0));
}

// --- events ------------------------------------------------------------------------------------

// SIM0 computes y0 = 0.5 x0 + 3 and records an event; SIM1 waits for it, copies y0 into its own
// memory and computes z = 0.5 y0 + 3 there.
TEST(SimEvents, OneDeviceWaitsForAnotherAcrossACopy) {
    auto b0 = init(*global_registry().dev_by_name("SIM0"));
    auto b1 = init(*global_registry().dev_by_name("SIM1"));
    HalfPlusThree first(*b0);
    HalfPlusThree second(*b1);
    auto event = b0->device().event_new();
    ASSERT_TRUE(event.is_ok()) << event.status().to_string();
    const std::vector<float> in = ramp(64, 1.0f);
    std::vector<float> out(64);
    for (bool peer_copy : {true, false}) {
        SCOPED_TRACE(peer_copy ? "copy through the source stream" : "copy ordered by the event alone");
        Gate gate;
        gate.block(as_sim(*b0));  // SIM0 cannot have computed anything before SIM1 is told to wait
        ASSERT_TRUE(tensor_set_async(*b0, *first.x, in.data(), 0, first.x->nbytes()).is_ok());
        ASSERT_TRUE(b0->graph_compute_async(first.graph).is_ok());
        ASSERT_TRUE((*event)->record(*b0).is_ok());
        ASSERT_TRUE((*event)->wait(*b1).is_ok());
        // (b1, b1): the copy runs on SIM1's stream and only the event orders it after SIM0's compute.
        Backend& copy_source = peer_copy ? *b0 : *b1;
        ASSERT_TRUE(tensor_copy_async(copy_source, *b1, *first.y, *second.x).is_ok());
        ASSERT_TRUE(b1->graph_compute_async(second.graph).is_ok());
        ASSERT_TRUE(tensor_get_async(*b1, *second.y, out.data(), 0, second.y->nbytes()).is_ok());
        gate.open();
        b1->synchronize();
        for (size_t i = 0; i < 64; ++i) ASSERT_EQ(out[i], (in[i] * 0.5f + 3.0f) * 0.5f + 3.0f) << i;
        EXPECT_TRUE((*event)->synchronize().is_ok());
        b0->synchronize();
        ASSERT_TRUE(tensor_memset(*first.y, 0, 0, first.y->nbytes()).is_ok());
    }
}

TEST(SimEvents, SynchronizeBlocksTheHostUntilTheStreamReachesTheEvent) {
    auto b0 = init(*global_registry().dev_by_name("SIM0"));
    HalfPlusThree f(*b0);
    auto event = b0->device().event_new();
    ASSERT_TRUE(event.is_ok());
    EXPECT_TRUE((*event)->synchronize().is_ok()) << "an event never recorded is complete";
    EXPECT_TRUE((*event)->wait(*b0).is_ok());
    const std::vector<float> in = ramp(64, 2.0f);
    std::vector<float> out(64);
    ASSERT_TRUE(tensor_set_async(*b0, *f.x, in.data(), 0, f.x->nbytes()).is_ok());
    ASSERT_TRUE(b0->graph_compute_async(f.graph).is_ok());
    ASSERT_TRUE(tensor_get_async(*b0, *f.y, out.data(), 0, f.y->nbytes()).is_ok());
    ASSERT_TRUE((*event)->record(*b0).is_ok());
    ASSERT_TRUE((*event)->synchronize().is_ok());
    for (size_t i = 0; i < 64; ++i) EXPECT_EQ(out[i], in[i] * 0.5f + 3.0f) << i;

    // A synchronous backend "waits" by blocking the host; recording needs a stream of the device.
    auto cpu = global_registry().init_by_name("CPU");
    ASSERT_TRUE(cpu.is_ok());
    EXPECT_TRUE((*event)->wait(**cpu).is_ok());
    EXPECT_EQ((*event)->record(**cpu).code(), StatusCode::InvalidArgument);
    auto b1 = init(*global_registry().dev_by_name("SIM1"));
    EXPECT_EQ((*event)->record(*b1).code(), StatusCode::InvalidArgument);
}

// --- modelled copy cost ------------------------------------------------------------------------

TEST(SimStats, CopyCountersModelLatencyPlusBytesOverBandwidth) {
    LocalSim sim;
    auto b0 = init(sim.dev(0), "bandwidth_gbps=2,latency_us=5");
    auto b1 = init(sim.dev(1), "bandwidth_gbps=4,latency_us=1,peer_bandwidth_gbps=50,peer_latency_us=2");
    Context ctx0, ctx1;
    Tensor* x = ctx0.new_tensor(DType::F32, {1000});
    Tensor* y = ctx0.new_tensor(DType::F32, {1000});
    Tensor* z = ctx1.new_tensor(DType::F32, {1000});
    auto buf0 = alloc_ctx_tensors(ctx0, *b0);
    auto buf1 = alloc_ctx_tensors(ctx1, *b1);
    ASSERT_TRUE(buf0.is_ok() && buf1.is_ok());
    auto cost = [](double latency_us, double gbps, double bytes) { return latency_us * 1e-6 + bytes / (gbps * 1e9); };

    const std::vector<float> values = ramp(1000, 0.0f);
    std::vector<float> out(1000);
    ASSERT_TRUE(tensor_set_async(*b0, *x, values.data(), 0, 4000).is_ok());
    ASSERT_TRUE(tensor_set_async(*b0, *x, values.data(), 400, 400).is_ok());
    ASSERT_TRUE(tensor_copy_async(*b0, *b0, *x, *y).is_ok());
    ASSERT_TRUE(tensor_get_async(*b0, *y, out.data(), 0, 4000).is_ok());
    ASSERT_TRUE(tensor_copy_async(*b0, *b1, *y, *z).is_ok());  // a peer copy, counted by SIM1's stream on its peer link
    b0->synchronize();
    b1->synchronize();

    // Host copies from and to std::vector memory are pageable: half the link's bandwidth (the
    // default pageable_ratio); copies within the device and between devices use the links as set.
    const sim::SimStats s0 = as_sim(*b0).stats();
    EXPECT_EQ(s0.host_to_device.count, 2u);
    EXPECT_EQ(s0.host_to_device.pinned, 0u);
    EXPECT_EQ(s0.host_to_device.bytes, 4400u);
    EXPECT_DOUBLE_EQ(s0.host_to_device.seconds, cost(5, 1, 4000) + cost(5, 1, 400));
    EXPECT_EQ(s0.device_to_device.count, 1u);
    EXPECT_EQ(s0.device_to_device.bytes, 4000u);
    EXPECT_DOUBLE_EQ(s0.device_to_device.seconds, cost(5, 2, 4000));
    EXPECT_EQ(s0.device_to_host.count, 1u);
    EXPECT_DOUBLE_EQ(s0.device_to_host.seconds, cost(5, 1, 4000));
    const sim::SimStats s1 = as_sim(*b1).stats();
    EXPECT_EQ(s1.peer.count, 1u);
    EXPECT_EQ(s1.peer.bytes, 4000u);
    EXPECT_DOUBLE_EQ(s1.peer.seconds, cost(2, 50, 4000));
    EXPECT_EQ(s1.host_to_device.count + s1.device_to_host.count + s1.device_to_device.count, 0u);
    // The scheduler's model of that copy is the peer link's; of a host copy, the link's.
    EXPECT_DOUBLE_EQ(as_sim(*b1).modelled_copy_seconds(*y, *z, *b0), cost(2, 50, 4000));
    EXPECT_DOUBLE_EQ(as_sim(*b0).modelled_copy_seconds(*y, *z, *b1), cost(5, 32, 4000));  // SIM0's default peer link
    EXPECT_DOUBLE_EQ(as_sim(*b1).link_gbps(*b0), 50.0);
    EXPECT_DOUBLE_EQ(as_sim(*b0).link_gbps(*b1), 32.0);

    // The device counts its streams' copies and the synchronous ones, with its own link (defaults:
    // 16 GB/s, 10 us).
    ASSERT_TRUE(tensor_get(*x, out.data(), 0, 4000).is_ok());
    ASSERT_TRUE(tensor_copy(*x, *y).is_ok());
    const sim::SimStats d0 = sim.dev(0).stats();
    EXPECT_EQ(d0.host_to_device.count, 2u);
    EXPECT_EQ(d0.device_to_host.count, 2u);
    EXPECT_EQ(d0.device_to_host.bytes, 8000u);
    EXPECT_DOUBLE_EQ(d0.device_to_host.seconds, cost(5, 1, 4000) + cost(10, 8, 4000));
    EXPECT_EQ(d0.device_to_device.count, 2u);
    EXPECT_DOUBLE_EQ(d0.device_to_device.seconds, cost(5, 2, 4000) + cost(10, 16, 4000));
    EXPECT_EQ(sim.dev(1).stats().peer.count, 1u);
    EXPECT_EQ(sim.dev(1).stats().device_to_device.count, 0u);

    as_sim(*b0).reset_stats();
    sim.dev(0).reset_stats();
    EXPECT_EQ(as_sim(*b0).stats().host_to_device.count, 0u);
    EXPECT_EQ(sim.dev(0).stats().device_to_host.seconds, 0.0);
}

// --- pinned host memory ------------------------------------------------------------------------

TEST(SimHostBuffer, PinnedHostMemoryIsOptionalHostMemoryTheCpuComputesIn) {
    LocalSim sim;
    SimDevice& dev = sim.dev(0);
    EXPECT_FALSE(dev.caps().host_buffer);
    EXPECT_EQ(dev.host_buffer_type(), nullptr);
    ASSERT_TRUE(dev.configure("host_buffer=1").is_ok());
    EXPECT_TRUE(dev.caps().host_buffer);
    BufferType* host = dev.host_buffer_type();
    ASSERT_NE(host, nullptr);
    EXPECT_STREQ(host->name(), "SIM0_Host");
    EXPECT_TRUE(host->is_host());
    EXPECT_TRUE(host->is_pinned());
    EXPECT_FALSE(dev.buffer_type().is_pinned());
    EXPECT_EQ(&host->device(), &dev);
    EXPECT_FALSE(dev.supports_buft(*host)) << "a discrete device cannot read host memory, pinned or not";
    Device& cpu_device = *global_registry().dev_by_name("CPU");
    EXPECT_TRUE(cpu_device.supports_buft(*host));
    EXPECT_FALSE(cpu_device.buffer_type().is_pinned());

    // Host memory: the device's own memory is untouched, the CPU computes in it.
    const size_t free_before = dev.memory().free;
    Context ctx;
    Tensor* a = ctx.new_tensor(DType::F32, {37, 3});
    Tensor* y = scale(ctx, a, 2.0f);
    auto pinned = alloc_ctx_tensors(ctx, *host);
    ASSERT_TRUE(pinned.is_ok()) << pinned.status().to_string();
    EXPECT_EQ(dev.memory().free, free_before);
    EXPECT_TRUE(dev.is_pinned(a->data, a->nbytes()));
    EXPECT_TRUE(sim.dev(1).is_pinned(y->data, y->nbytes())) << "pinned for every simulated device, as portable memory";
    const std::vector<float> values = ramp(111, -3.0f, 0.25f);
    ASSERT_TRUE(tensor_set_f32(*a, values).is_ok());
    auto g = Graph::build({y});
    ASSERT_TRUE(g.is_ok());
    auto cpu = init(cpu_device);
    ASSERT_TRUE(cpu->graph_compute(*g).is_ok());
    const std::vector<float> out = tensor_get_f32(*y).value();
    for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(out[i], 2.0f * values[i]) << i;

    // Freed memory is no longer pinned; turning the setting off hides the type, not live buffers.
    void* where = a->data;
    ASSERT_TRUE(dev.configure("host_buffer=0").is_ok());
    EXPECT_EQ(dev.host_buffer_type(), nullptr);
    EXPECT_TRUE(dev.is_pinned(where, 4));
    pinned->reset();
    EXPECT_FALSE(dev.is_pinned(where, 4));

    // fail_alloc counts pinned allocations too.
    ASSERT_TRUE(dev.configure("host_buffer=1,fail_alloc=1").is_ok());
    auto failed = host->alloc_buffer(1024);
    ASSERT_FALSE(failed.is_ok());
    EXPECT_EQ(failed.status().code(), StatusCode::OutOfMemory);
    EXPECT_NE(failed.status().message().find("SIM0_Host"), std::string::npos) << failed.status().message();
}

TEST(SimDevice, OffloadMinBatchAsksForLargeBatchesAsCudaDoes) {
    LocalSim sim;
    SimDevice& dev = sim.dev(0);
    Context ctx;
    Tensor* w = ctx.new_tensor(DType::F32, {64, 64});
    Tensor* x8 = ctx.new_tensor(DType::F32, {64, 8});
    Tensor* x7 = ctx.new_tensor(DType::F32, {64, 7});
    EXPECT_FALSE(dev.offload_op(*mul_mat(ctx, w, x8))) << "never by default";
    auto b = init(dev, "offload_min_batch=8");  // device-wide, like memory
    EXPECT_TRUE(dev.offload_op(*mul_mat(ctx, w, x8)));
    EXPECT_TRUE(b->offload_op(*mul_mat(ctx, w, x8)));
    EXPECT_FALSE(dev.offload_op(*mul_mat(ctx, w, x7)));
    EXPECT_FALSE(dev.offload_op(*get_rows(ctx, w, ctx.new_tensor(DType::I32, {64})))) << "a few rows of a large table";
    EXPECT_FALSE(sim.dev(1).offload_op(*mul_mat(ctx, w, x8)));
}

TEST(SimHostBuffer, CopiesFromPinnedMemoryAreModelledAtTheLinkAndPageableAtItsPageableShare) {
    LocalSim sim;
    ASSERT_TRUE(sim.dev(0).configure("host_buffer=1").is_ok());
    auto b0 = init(sim.dev(0), "bandwidth_gbps=4,latency_us=2,pageable_ratio=0.25");
    auto cpu = init(*global_registry().dev_by_name("CPU"));
    Context host_ctx, page_ctx, dev_ctx;
    Tensor* pinned = host_ctx.new_tensor(DType::F32, {1000});
    Tensor* pageable = page_ctx.new_tensor(DType::F32, {1000});
    Tensor* d = dev_ctx.new_tensor(DType::F32, {1000});
    auto hb = alloc_ctx_tensors(host_ctx, *sim.dev(0).host_buffer_type());
    auto pb = alloc_ctx_tensors(page_ctx, *cpu);
    auto db = alloc_ctx_tensors(dev_ctx, *b0);
    ASSERT_TRUE(hb.is_ok() && pb.is_ok() && db.is_ok());
    ASSERT_TRUE(tensor_set_f32(*pinned, ramp(1000, 1.0f)).is_ok());
    ASSERT_TRUE(tensor_set_f32(*pageable, ramp(1000, 2.0f)).is_ok());
    auto cost = [](double latency_us, double gbps, double bytes) { return latency_us * 1e-6 + bytes / (gbps * 1e9); };

    // The scheduler's model of each copy, either way.
    const SimBackend& s0 = as_sim(*b0);
    EXPECT_DOUBLE_EQ(s0.modelled_copy_seconds(*pinned, *d, *cpu), cost(2, 4, 4000));
    EXPECT_DOUBLE_EQ(s0.modelled_copy_seconds(*pageable, *d, *cpu), cost(2, 1, 4000));
    EXPECT_DOUBLE_EQ(s0.modelled_copy_seconds(*d, *pinned, *cpu), cost(2, 4, 4000));
    EXPECT_DOUBLE_EQ(s0.modelled_copy_seconds(*d, *pageable, *cpu), cost(2, 1, 4000));
    EXPECT_DOUBLE_EQ(s0.link_gbps(*cpu), 4.0);
    EXPECT_EQ(copy_link_gbps(*cpu, *b0).value_or(-1), 4.0);
    EXPECT_EQ(copy_link_gbps(*b0, *cpu).value_or(-1), 4.0);
    EXPECT_FALSE(copy_link_gbps(*cpu, *cpu).has_value()) << "two host backends: no link";
    EXPECT_EQ(sim.dev(0).host_link_gbps().value_or(-1), 16.0) << "the device's own link setting";

    // The stream's copies: asynchronous ones and those through raw pointers alike.
    ASSERT_TRUE(tensor_copy_async(*cpu, *b0, *pinned, *d).is_ok());
    ASSERT_TRUE(tensor_copy_async(*cpu, *b0, *pageable, *d).is_ok());
    ASSERT_TRUE(tensor_get_async(*b0, *d, pinned->data, 0, 4000).is_ok());
    ASSERT_TRUE(tensor_get_async(*b0, *d, pageable->data, 0, 4000).is_ok());
    b0->synchronize();
    ASSERT_TRUE(b0->take_async_error().is_ok());
    const sim::SimStats st = s0.stats();
    EXPECT_EQ(st.host_to_device.count, 2u);
    EXPECT_EQ(st.host_to_device.pinned, 1u);
    EXPECT_DOUBLE_EQ(st.host_to_device.seconds, cost(2, 4, 4000) + cost(2, 1, 4000));
    EXPECT_EQ(st.device_to_host.count, 2u);
    EXPECT_EQ(st.device_to_host.pinned, 1u);
    EXPECT_DOUBLE_EQ(st.device_to_host.seconds, cost(2, 4, 4000) + cost(2, 1, 4000));
    EXPECT_EQ(tensor_get_f32(*pinned).value(), ramp(1000, 2.0f)) << "the bytes made the round trip";

    // Synchronous copies through the buffers: the device's own link (16 GB/s, 10 us, half pageable).
    sim.dev(0).reset_stats();
    ASSERT_TRUE(tensor_copy(*pinned, *d).is_ok());
    ASSERT_TRUE(tensor_copy(*pageable, *d).is_ok());
    const sim::SimStats dst = sim.dev(0).stats();
    EXPECT_EQ(dst.host_to_device.pinned, 1u);
    EXPECT_DOUBLE_EQ(dst.host_to_device.seconds, cost(10, 16, 4000) + cost(10, 8, 4000));
}

// --- fault injection ---------------------------------------------------------------------------

// A graph with two branches from inputs a and b, every node named and kept as an output.
struct Branches {
    explicit Branches(Backend& backend) {
        a = ctx.new_tensor(DType::F32, {16, 3});
        b = ctx.new_tensor(DType::F32, {16, 3});
        Tensor* sum = add(ctx, a, b);                    // left
        Tensor* prod = mul(ctx, a, b);                   // right
        Tensor* half = scale(ctx, sum, 0.5f);            // left
        Tensor* sq = sqr(ctx, prod);                     // right
        Tensor* joined = add(ctx, half, sq);             // both
        Tensor* moved = scale(ctx, prod, 2.0f, 1.0f);    // right
        Tensor* last = mul(ctx, joined, moved);          // both
        std::vector<Tensor*> named = {sum, prod, half, sq, joined, moved, last};
        const char* names[] = {"sum", "prod", "half", "sq", "joined", "moved", "last"};
        for (size_t i = 0; i < named.size(); ++i) {
            named[i]->name = names[i];
            named[i]->set_output();
        }
        auto g = Graph::build({last, half});
        auto buf = alloc_ctx_tensors(ctx, backend);
        EXPECT_TRUE(g.is_ok() && buf.is_ok());
        graph = std::move(g).value();
        buffer = std::move(buf).value();
        EXPECT_TRUE(tensor_set_f32(*a, ramp(48, -2.0f, 0.1f)).is_ok());
        EXPECT_TRUE(tensor_set_f32(*b, ramp(48, 1.5f, -0.05f)).is_ok());
    }

    // Every node's values after computing on `backend`.
    std::vector<std::vector<float>> run(Backend& backend) const {
        EXPECT_TRUE(backend.graph_compute(graph).is_ok());
        std::vector<std::vector<float>> out;
        for (const Tensor* n : graph.nodes()) out.push_back(tensor_get_f32(*n).value());
        return out;
    }

    // depends[j]: node j is node k or reads (directly or not) from it.
    std::vector<bool> dependents_of(int k) const {
        std::unordered_map<const Tensor*, int> index;
        std::vector<bool> depends(static_cast<size_t>(graph.n_nodes()), false);
        for (int j = 0; j < graph.n_nodes(); ++j) {
            const Tensor* n = graph.node(j);
            index[n] = j;
            depends[j] = j == k;
            for (const Tensor* s : n->src) {
                if (s != nullptr && index.count(s) && depends[static_cast<size_t>(index[s])]) depends[j] = true;
            }
        }
        return depends;
    }

    Context ctx;
    Tensor* a;
    Tensor* b;
    Graph graph;
    std::unique_ptr<MultiBuffer> buffer;
};

TEST(SimFault, PerturbsExactlyTheChosenNodeAndWhatDependsOnIt) {
    auto cpu = global_registry().init_by_name("CPU", "threads=1");
    ASSERT_TRUE(cpu.is_ok());
    Branches on_cpu(**cpu);
    const auto expected = on_cpu.run(**cpu);

    auto clean = init(*global_registry().dev_by_name("SIM0"));
    EXPECT_EQ(Branches(*clean).run(*clean), expected) << "without a fault every node matches the CPU bit for bit";

    const int n_nodes = on_cpu.graph.n_nodes();
    ASSERT_EQ(n_nodes, 7);
    for (int k = 0; k < n_nodes; ++k) {
        const std::string by_index = "fault_node=" + std::to_string(k);
        const std::string by_name = "fault_node=" + on_cpu.graph.node(k)->name;
        for (const std::string& params : {by_index, by_name}) {
            SCOPED_TRACE(params);
            auto faulty = init(*global_registry().dev_by_name("SIM1"), params);
            ASSERT_NE(faulty, nullptr);
            const auto got = Branches(*faulty).run(*faulty);
            const std::vector<bool> depends = on_cpu.dependents_of(k);
            for (int j = 0; j < n_nodes; ++j) {
                if (depends[j]) {
                    EXPECT_NE(got[j], expected[j]) << "node " << j << " depends on node " << k;
                } else {
                    EXPECT_EQ(got[j], expected[j]) << "node " << j << " does not depend on node " << k;
                }
            }
            // The chosen node itself, by the default size 0.5: even elements x1.5, odd ones x0.5
            // (zeros become +0.5 and -0.5).
            for (size_t e : {size_t{0}, size_t{5}}) {
                const float want = expected[k][e];
                const float turn = e % 2 == 0 ? 0.5f : -0.5f;
                EXPECT_FLOAT_EQ(got[k][e], want == 0.0f ? turn : want * (1.0f + turn)) << e;
            }
        }
    }
}

// A graph that repeats its nodes (op-check's perf mode, as ggml's test-backend-ops) computes every
// repetition: a fault on a node of the last repetition, counted by its index there, shows.
TEST(SimFault, RepeatedGraphsComputeEveryRepetition) {
    auto cpu = global_registry().init_by_name("CPU", "threads=1");
    ASSERT_TRUE(cpu.is_ok());
    Branches on_cpu(**cpu);
    const auto expected = on_cpu.run(**cpu);
    const int n_nodes = on_cpu.graph.n_nodes();
    auto faulty = init(*global_registry().dev_by_name("SIM1"), "fault_node=" + std::to_string(2 * n_nodes + 3));
    ASSERT_NE(faulty, nullptr);
    Branches on_sim(*faulty);
    ASSERT_TRUE(faulty->graph_compute(on_sim.graph.repeated(3)).is_ok());
    const std::vector<bool> depends = on_cpu.dependents_of(3);
    for (int j = 0; j < n_nodes; ++j) {
        const auto got = tensor_get_f32(*on_sim.graph.node(j)).value();
        if (depends[static_cast<size_t>(j)]) {
            EXPECT_NE(got, expected[static_cast<size_t>(j)]) << "node " << j << " of the last repetition";
        } else {
            EXPECT_EQ(got, expected[static_cast<size_t>(j)]) << "node " << j;
        }
    }
}

TEST(SimFault, SizedFaultScalesTheElementsUpAndDownInTurn) {
    auto cpu = global_registry().init_by_name("CPU", "threads=1");
    ASSERT_TRUE(cpu.is_ok());
    Branches on_cpu(**cpu);
    const auto expected = on_cpu.run(**cpu);
    auto faulty = init(*global_registry().dev_by_name("SIM1"), "fault_node=prod+sum,fault_size=0.001");
    ASSERT_NE(faulty, nullptr);
    const auto got = Branches(*faulty).run(*faulty);
    for (int k = 0; k < on_cpu.graph.n_nodes(); ++k) {
        const std::string& name = on_cpu.graph.node(k)->name;
        if (name != "prod" && name != "sum") continue;
        SCOPED_TRACE(name);
        const std::vector<float>& want = expected[static_cast<size_t>(k)];
        const std::vector<float>& faulted = got[static_cast<size_t>(k)];
        double err = 0, norm = 0;
        for (size_t i = 0; i < want.size(); ++i) {
            const float turn = i % 2 == 0 ? 0.001f : -0.001f;  // a zero becomes +-0.001
            EXPECT_FLOAT_EQ(faulted[i], want[i] == 0.0f ? turn : want[i] * (1.0f + turn)) << i;
            err += std::pow(double(faulted[i]) - want[i], 2);
            norm += std::pow(double(want[i]), 2);
        }
        EXPECT_NEAR(err / norm, 1e-6, 1e-7) << "NMSE is about size^2";
    }
}

// perturb_output reaches every type a node can have: a node of zeros, f16, a quantized result (a
// cpy into q8_0) and integers all come out different, the floats by about size^2 in NMSE.
TEST(SimFault, EveryTypeIsPerturbedZerosIncluded) {
    auto nmse_of_fault = [](DType type, const std::vector<float>& values) {
        Context ctx;
        Tensor* t = ctx.new_tensor(type, {static_cast<int64_t>(values.size())});
        std::vector<std::byte> storage(t->nbytes());
        t->data = storage.data();
        std::vector<float> before(values.size());
        if (is_quantized(type)) {
            quantize_row(type, values.data(), t->data, t->ne[0]);
            dequantize_row(type, t->data, before.data(), t->ne[0]);
        } else {
            for (size_t i = 0; i < values.size(); ++i) store_from_f32(type, t->element_ptr(static_cast<int64_t>(i)), values[i]);
            for (size_t i = 0; i < values.size(); ++i) before[i] = load_as_f32(type, t->element_ptr(static_cast<int64_t>(i)));
        }
        sim::perturb_output(*t);
        std::vector<float> after(values.size());
        if (is_quantized(type)) {
            dequantize_row(type, t->data, after.data(), t->ne[0]);
        } else {
            for (size_t i = 0; i < values.size(); ++i) after[i] = load_as_f32(type, t->element_ptr(static_cast<int64_t>(i)));
        }
        double err = 0, norm = 0;
        for (size_t i = 0; i < values.size(); ++i) {
            err += std::pow(double(after[i]) - before[i], 2);
            norm += std::pow(double(before[i]), 2);
        }
        return norm > 0 ? err / norm : err;
    };
    const std::vector<float> ramp_values = ramp(64, -1.0f, 0.03f);
    EXPECT_GT(nmse_of_fault(DType::F32, std::vector<float>(64, 0.0f)), 0.0) << "zeros become +-0.5";
    EXPECT_NEAR(nmse_of_fault(DType::F32, ramp_values), 0.25, 0.05);
    EXPECT_NEAR(nmse_of_fault(DType::F16, ramp_values), 0.25, 0.05);
    EXPECT_NEAR(nmse_of_fault(DType::Q8_0, ramp_values), 0.25, 0.05);
    EXPECT_GT(nmse_of_fault(DType::I32, {3, 4, 5, 6}), 0.0) << "the first id moves by one";
}

}  // namespace
}  // namespace xb
