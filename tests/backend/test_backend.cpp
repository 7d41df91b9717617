// Backend conformance: every registered device must pass these (buffers, tensor I/O, copies,
// async fallbacks, events, errors). New backends join by registering.
#include <gtest/gtest.h>

#include <omp.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <numeric>
#include <vector>

#include "alloc/context_alloc.hpp"
#include "alloc/linear_allocator.hpp"
#include "backend/host_threads.hpp"
#include "backend/registry.hpp"
#include "builtin/builtin_backends.hpp"
#include "backend/tensor_io.hpp"
#include "core/ops.hpp"

namespace xb {
namespace {

std::vector<std::string> device_names() {
    std::vector<std::string> names;
    for (size_t i = 0; i < global_registry().dev_count(); ++i) names.emplace_back(global_registry().dev(i).name());
    return names;
}

std::vector<float> iota_values(size_t n, float start) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = start + 0.5f * static_cast<float>(i);
    return v;
}

class BackendConformance : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        device_ = global_registry().dev_by_name(GetParam());
        ASSERT_NE(device_, nullptr);
        auto b = device_->init_backend();
        ASSERT_TRUE(b.is_ok()) << b.status().to_string();
        backend_ = std::move(b).value();
    }

    // A buffer of the device holding `t`, placed by the linear allocator.
    std::unique_ptr<Buffer> place(Tensor& t, size_t extra = 0) {
        auto buf = backend_->alloc_buffer(backend_->default_buffer_type().alloc_size(t) + backend_->alignment() + extra);
        EXPECT_TRUE(buf.is_ok()) << buf.status().to_string();
        LinearAllocator alloc(**buf);
        EXPECT_TRUE(alloc.alloc(t).is_ok());
        return std::move(buf).value();
    }

    Device* device_ = nullptr;
    std::unique_ptr<Backend> backend_;
};

TEST_P(BackendConformance, DevicePropertiesAreConsistent) {
    const DeviceProps p = device_->props();
    EXPECT_FALSE(p.name.empty());
    EXPECT_FALSE(p.description.empty());
    EXPECT_GT(p.memory_total, 0u);
    EXPECT_LE(p.memory_free, p.memory_total);
    EXPECT_EQ(global_registry().dev_by_name(p.name), device_);
    EXPECT_TRUE(device_->supports_buft(device_->buffer_type()));
    if (device_->type() == DeviceType::Accel) {
        // An accelerator over host memory (BLAS) shares the CPU's buffer type, as in ggml.
        EXPECT_TRUE(device_->buffer_type().is_host());
    } else {
        EXPECT_EQ(&device_->buffer_type().device(), device_);
    }
    EXPECT_EQ(&backend_->device(), device_);
}

TEST_P(BackendConformance, BufferAllocationAndAlignment) {
    BufferType& buft = device_->buffer_type();
    const size_t align = buft.alignment();
    ASSERT_GT(align, 0u);
    EXPECT_EQ(align & (align - 1), 0u) << "alignment must be a power of two";
    auto buf = buft.alloc_buffer(4096);
    ASSERT_TRUE(buf.is_ok()) << buf.status().to_string();
    EXPECT_EQ((*buf)->size(), 4096u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>((*buf)->base()) % align, 0u);
    EXPECT_EQ(&(*buf)->type(), &buft);
    (*buf)->set_usage(BufferUsage::Weights);
    EXPECT_EQ((*buf)->usage(), BufferUsage::Weights);

    Context ctx;
    Tensor* t = ctx.new_tensor(DType::F16, {13, 3});
    EXPECT_GE(buft.alloc_size(*t), t->nbytes());
}

TEST_P(BackendConformance, SetGetAtOffsetsMemsetAndClear) {
    Context ctx;
    Tensor* t = ctx.new_tensor(DType::F32, {17, 3});
    auto buf = place(*t);
    const std::vector<float> values = iota_values(51, -3.0f);
    ASSERT_TRUE(tensor_set(*t, values.data(), 0, t->nbytes()).is_ok());

    std::vector<float> part(5);
    ASSERT_TRUE(tensor_get(*t, part.data(), 7 * sizeof(float), part.size() * sizeof(float)).is_ok());
    for (size_t i = 0; i < part.size(); ++i) EXPECT_EQ(part[i], values[7 + i]);

    const std::vector<float> patch = {100.0f, 200.0f};
    ASSERT_TRUE(tensor_set(*t, patch.data(), 20 * sizeof(float), sizeof(float) * 2).is_ok());
    ASSERT_TRUE(tensor_memset(*t, 0, 40 * sizeof(float), 3 * sizeof(float)).is_ok());
    std::vector<float> all(51);
    ASSERT_TRUE(tensor_get(*t, all.data(), 0, t->nbytes()).is_ok());
    for (size_t i = 0; i < all.size(); ++i) {
        const float expect = (i == 20) ? 100.0f : (i == 21) ? 200.0f : (i >= 40 && i < 43) ? 0.0f : values[i];
        EXPECT_EQ(all[i], expect) << i;
    }

    buf->clear(0);
    ASSERT_TRUE(tensor_get(*t, all.data(), 0, t->nbytes()).is_ok());
    for (float v : all) EXPECT_EQ(v, 0.0f);
}

TEST_P(BackendConformance, OutOfBoundsAndUnallocatedAccessAreErrors) {
    Context ctx;
    Tensor* t = ctx.new_tensor(DType::F32, {8});
    Tensor* unplaced = ctx.new_tensor(DType::F32, {8});
    auto buf = place(*t);
    std::vector<float> data(16);
    Status past_end = tensor_set(*t, data.data(), 4, t->nbytes());
    EXPECT_EQ(past_end.code(), StatusCode::OutOfRange);
    EXPECT_NE(past_end.message().find("outside tensor"), std::string::npos);
    EXPECT_EQ(tensor_get(*t, data.data(), t->nbytes() + 1, 1).code(), StatusCode::OutOfRange);
    EXPECT_EQ(tensor_memset(*t, 0, 0, t->nbytes() + 4).code(), StatusCode::OutOfRange);
    // An offset near SIZE_MAX must not wrap around.
    EXPECT_EQ(tensor_get(*t, data.data(), SIZE_MAX - 2, 4).code(), StatusCode::OutOfRange);
    EXPECT_EQ(tensor_set(*unplaced, data.data(), 0, 4).code(), StatusCode::InvalidArgument);
    EXPECT_EQ(tensor_set_async(*backend_, *t, data.data(), 0, t->nbytes() * 2).code(), StatusCode::OutOfRange);
    // Buffer's own members check as tensor_io does, and refuse a tensor of another buffer.
    Tensor* other = ctx.new_tensor(DType::F32, {8});
    auto other_buf = place(*other);
    EXPECT_EQ(buf->set_tensor(*other, data.data(), 0, 4).code(), StatusCode::InvalidArgument);
    EXPECT_EQ(buf->get_tensor(*t, data.data(), 28, 8).code(), StatusCode::OutOfRange);
    EXPECT_EQ(buf->memset_tensor(*unplaced, 0, 0, 4).code(), StatusCode::InvalidArgument);
    EXPECT_EQ(buf->copy_tensor(*t, *other).status().code(), StatusCode::InvalidArgument) << "dst is not in buf";
    EXPECT_TRUE(buf->set_tensor(*t, data.data(), 4, 28).is_ok());
}

TEST_P(BackendConformance, OutOfMemoryIsAStatus) {
    auto huge = device_->buffer_type().alloc_buffer(size_t{1} << 60);
    ASSERT_FALSE(huge.is_ok());
    EXPECT_EQ(huge.status().code(), StatusCode::OutOfMemory);
}

TEST_P(BackendConformance, CopiesBetweenBuffersAndToTheCpu) {
    Context ctx;
    Tensor* a = ctx.new_tensor(DType::F32, {9, 4});
    Tensor* b = ctx.new_tensor(DType::F32, {9, 4});
    Tensor* host = ctx.new_tensor(DType::F32, {9, 4});
    auto buf_a = place(*a);
    auto buf_b = place(*b);
    auto cpu = global_registry().init_by_name("CPU");
    ASSERT_TRUE(cpu.is_ok());
    auto buf_host = (*cpu)->alloc_buffer(host->nbytes());
    ASSERT_TRUE(buf_host.is_ok());
    ASSERT_TRUE(LinearAllocator(**buf_host).alloc(*host).is_ok());

    const std::vector<float> values = iota_values(36, 1.0f);
    ASSERT_TRUE(tensor_set(*a, values.data(), 0, a->nbytes()).is_ok());
    ASSERT_TRUE(tensor_copy(*a, *b).is_ok());        // device -> device
    ASSERT_TRUE(tensor_copy(*b, *host).is_ok());     // device -> host
    auto got = tensor_get_f32(*host);
    ASSERT_TRUE(got.is_ok());
    EXPECT_EQ(*got, values);

    Tensor* other_shape = ctx.new_tensor(DType::F32, {36});
    EXPECT_EQ(tensor_copy(*a, *other_shape).code(), StatusCode::InvalidArgument);
}

TEST_P(BackendConformance, AsyncTransfersCompleteAfterSynchronize) {
    Context ctx;
    Tensor* t = ctx.new_tensor(DType::F32, {33});
    Tensor* u = ctx.new_tensor(DType::F32, {33});
    auto buf_t = place(*t);
    auto buf_u = place(*u);
    const std::vector<float> values = iota_values(33, 2.0f);
    ASSERT_TRUE(tensor_set_async(*backend_, *t, values.data(), 0, t->nbytes()).is_ok());
    ASSERT_TRUE(tensor_copy_async(*backend_, *backend_, *t, *u).is_ok());
    std::vector<float> out(33);
    ASSERT_TRUE(tensor_get_async(*backend_, *u, out.data(), 0, u->nbytes()).is_ok());
    backend_->synchronize();
    EXPECT_EQ(out, values);
}

TEST_P(BackendConformance, EventsWhereSupported) {
    auto event = device_->event_new();
    if (!device_->caps().events) {
        ASSERT_FALSE(event.is_ok());
        EXPECT_EQ(event.status().code(), StatusCode::NotSupported);
        return;
    }
    ASSERT_TRUE(event.is_ok()) << event.status().to_string();
    EXPECT_TRUE((*event)->record(*backend_).is_ok());
    EXPECT_TRUE((*event)->wait(*backend_).is_ok());
    EXPECT_TRUE((*event)->synchronize().is_ok());
}

TEST_P(BackendConformance, ComputesASmallGraphAndPlansAgree) {
    Context ctx;
    Tensor* a = ctx.new_tensor(DType::F32, {7, 5});
    Tensor* b = ctx.new_tensor(DType::F32, {7});
    Tensor* y = mul(ctx, add(ctx, a, b), b);
    auto g = Graph::build({y});
    ASSERT_TRUE(g.is_ok());
    for (const Tensor* n : g->nodes()) {
        if (!backend_->supports_op(*n)) GTEST_SKIP() << GetParam() << " does not support " << op_name(n->op);
    }
    auto buf = alloc_ctx_tensors(ctx, *backend_);
    ASSERT_TRUE(buf.is_ok()) << buf.status().to_string();
    const std::vector<float> av = iota_values(35, -4.0f), bv = iota_values(7, 0.25f);
    ASSERT_TRUE(tensor_set_f32(*a, av).is_ok());
    ASSERT_TRUE(tensor_set_f32(*b, bv).is_ok());
    ASSERT_TRUE(backend_->graph_compute(*g).is_ok());
    auto out = tensor_get_f32(*y);
    ASSERT_TRUE(out.is_ok());
    for (size_t i = 0; i < 35; ++i) EXPECT_FLOAT_EQ((*out)[i], (av[i] + bv[i % 7]) * bv[i % 7]);

    auto plan = backend_->graph_plan_create(*g);
    if (!plan.is_ok()) {
        EXPECT_EQ(plan.status().code(), StatusCode::NotSupported);
        return;
    }
    ASSERT_TRUE(tensor_memset(*y, 0, 0, y->nbytes()).is_ok());
    ASSERT_TRUE(backend_->graph_plan_compute(**plan).is_ok());
    auto again = tensor_get_f32(*y);
    ASSERT_TRUE(again.is_ok());
    EXPECT_EQ(*again, *out);
}

INSTANTIATE_TEST_SUITE_P(AllDevices, BackendConformance, ::testing::ValuesIn(device_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                             // gtest names allow letters, digits and '_' only ("ggml:CPU" -> "ggml_CPU").
                             std::string name = info.param;
                             for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                             return name;
                         });

// --- registry and CPU-specific behaviour ---------------------------------------------------------

TEST(Registry, LookupByNameAndType) {
    Registry& reg = global_registry();
    ASSERT_GE(reg.dev_count(), 1u);
    EXPECT_EQ(std::string(reg.dev(0).name()), "CPU");
    EXPECT_NE(reg.dev_by_name("cpu"), nullptr);
    EXPECT_NE(reg.dev_by_type(DeviceType::CPU), nullptr);
    EXPECT_NE(reg.reg_by_name("CPU"), nullptr);
    auto missing = reg.init_by_name("NOPE0");
    ASSERT_FALSE(missing.is_ok());
    EXPECT_EQ(missing.status().code(), StatusCode::NotFound);
    EXPECT_NE(missing.status().message().find("CPU"), std::string::npos) << "the message lists what is available";
    auto best = reg.init_best();
    ASSERT_TRUE(best.is_ok());
    EXPECT_FALSE(best.value()->device().is_simulated()) << "a simulator is never the best device";
    auto cpu = reg.init_by_type(DeviceType::CPU, "threads=1");
    ASSERT_TRUE(cpu.is_ok()) << cpu.status().to_string();
    EXPECT_STREQ(cpu.value()->name(), "CPU");
    EXPECT_EQ(reg.init_by_type(DeviceType::CPU, "colour=blue").status().code(), StatusCode::InvalidArgument);
}

TEST(Registry, DeviceParamsAreValidated) {
    auto ok = global_registry().init_by_name("CPU", "threads=2");
    ASSERT_TRUE(ok.is_ok());
    auto unknown = global_registry().init_by_name("CPU", "colour=blue");
    ASSERT_FALSE(unknown.is_ok());
    EXPECT_EQ(unknown.status().code(), StatusCode::InvalidArgument);
    EXPECT_FALSE(global_registry().init_by_name("CPU", "threads=0").is_ok());
    EXPECT_FALSE(global_registry().init_by_name("CPU", "threads").is_ok());
}

// A 100-node chain of cheap ops: threads race through the barriers.
struct ScaleChain {
    Context ctx;
    Graph graph;
    std::unique_ptr<MultiBuffer> buffer;
};

std::unique_ptr<ScaleChain> make_scale_chain(Backend& backend) {
    auto chain = std::make_unique<ScaleChain>();
    Tensor* t = chain->ctx.new_tensor(DType::F32, {64});
    for (int i = 0; i < 100; ++i) t = scale(chain->ctx, t, 1.0f);
    auto g = Graph::build({t});
    auto buf = alloc_ctx_tensors(chain->ctx, backend);
    if (!g.is_ok() || !buf.is_ok()) return nullptr;
    chain->graph = std::move(g).value();
    chain->buffer = std::move(buf).value();
    return chain;
}

TEST(HostThreads, HyperthreadSiblingsCountAsOneCore) {
    // Two cores with two hyperthreads each, listed as the kernel does (a range and a list).
    const auto two_by_two = [](int cpu) { return std::string(cpu < 2 ? "0-1" : "2,3"); };
    EXPECT_EQ(count_physical_cores({0, 1, 2, 3}, two_by_two), 2);
    EXPECT_EQ(count_physical_cores({0, 2}, two_by_two), 2);  // one thread of each core allowed
    EXPECT_EQ(count_physical_cores({2, 3}, two_by_two), 1);
    // Unknown topology: every CPU is a core.
    EXPECT_EQ(count_physical_cores({0, 1, 5}, [](int) { return std::string(); }), 3);
    EXPECT_EQ(count_physical_cores({}, two_by_two), 0);
}

TEST(HostThreads, DefaultIsAtLeastOneAndAtMostTheCpus) {
    const int n = default_host_threads();
    EXPECT_GE(n, 1);
    if (std::getenv("OMP_NUM_THREADS") == nullptr) {
        EXPECT_LE(n, omp_get_num_procs());
    }
}

TEST(CpuBackend, AbortCallbackStopsTheGraph) {
    auto cpu = global_registry().init_by_name("CPU");
    ASSERT_TRUE(cpu.is_ok());
    auto chain = make_scale_chain(**cpu);
    ASSERT_NE(chain, nullptr);
    std::atomic<int> polls{0};
    ASSERT_TRUE((*cpu)->set_abort_callback([&] { return ++polls >= 10; }));
    Status s = (*cpu)->graph_compute(chain->graph);
    EXPECT_EQ(s.code(), StatusCode::Aborted);
    EXPECT_EQ(polls.load(), 10) << "computation stops at the node where the callback asked";
}

// Every thread must take the same stop decision even when some run ahead: more threads than
// cores makes stragglers likely. A wrong decision deadlocks at a barrier (the test times out).
TEST(CpuBackend, AbortIsSeenByEveryThreadUnderOversubscription) {
    auto cpu = global_registry().init_by_name("CPU", "threads=6");
    ASSERT_TRUE(cpu.is_ok());
    auto chain = make_scale_chain(**cpu);
    ASSERT_NE(chain, nullptr);
    for (int stop_at = 1; stop_at <= 60; ++stop_at) {
        int polls = 0;
        ASSERT_TRUE((*cpu)->set_abort_callback([&] { return ++polls >= stop_at; }));
        ASSERT_EQ((*cpu)->graph_compute(chain->graph).code(), StatusCode::Aborted);
        ASSERT_EQ(polls, stop_at);
    }
}

TEST(CpuBackend, BufferFromHostPointer) {
    Device* cpu = global_registry().dev_by_name("CPU");
    ASSERT_TRUE(cpu->caps().buffer_from_host_ptr);
    alignas(64) float storage[32] = {};
    auto buf = cpu->buffer_from_host_ptr(storage, sizeof storage, sizeof storage);
    ASSERT_TRUE(buf.is_ok()) << buf.status().to_string();
    EXPECT_TRUE((*buf)->is_host());
    Context ctx;
    Tensor* t = ctx.new_tensor(DType::F32, {32});
    ASSERT_TRUE(LinearAllocator(**buf).alloc(*t).is_ok());
    const std::vector<float> v = iota_values(32, 1.0f);
    ASSERT_TRUE(tensor_set(*t, v.data(), 0, t->nbytes()).is_ok());
    EXPECT_EQ(storage[5], v[5]) << "the buffer writes the caller's memory";
    EXPECT_FALSE(cpu->buffer_from_host_ptr(reinterpret_cast<std::byte*>(storage) + 4, 64, 64).is_ok());
}

TEST(CpuBackend, UnallocatedNodeIsAnError) {
    auto cpu = global_registry().init_by_name("CPU");
    ASSERT_TRUE(cpu.is_ok());
    Context ctx;
    Tensor* y = relu(ctx, ctx.new_tensor(DType::F32, {4}));
    auto g = Graph::build({y});
    ASSERT_TRUE(g.is_ok());
    Status s = (*cpu)->graph_compute(*g);
    EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
    EXPECT_NE(s.message().find("not allocated"), std::string::npos);
}

}  // namespace
}  // namespace xb
