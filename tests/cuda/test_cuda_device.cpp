// The CUDA backend on a GPU: device properties, buffers (device, pinned, registered host memory),
// pinned host weights (uploads on the stream, the offload placement, the measured link), streams,
// copies between streams and GPUs, events, errors found by kernels, refusals that keep the device
// usable, offload_op, the scheduler with pipelined copies, and larger problems than the op
// conformance suite's (which runs on CUDA0 too, through the registry) against the CPU.
//
// Without a GPU every test here is skipped with the reason: "no CUDA device: <the CUDA error>" or
// "built without CUDA" -- never passed; under XB_REQUIRE_GPU=1 they fail instead (gpu_required.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "alloc/context_alloc.hpp"
#include "alloc/linear_allocator.hpp"
#include "backend/registry.hpp"
#include "backend/row_split_buffer.hpp"
#include "builtin/builtin_backends.hpp"
#include "backend/tensor_io.hpp"
#include "core/ops.hpp"
#include "gpu_required.hpp"
#include "local_registry.hpp"
#include "report/metrics.hpp"
#include "sched/scheduler.hpp"
#include "test_config_util.hpp"
#include "test_values.hpp"
#if defined(XB_HAVE_CUDA)
#include "cuda/cuda.hpp"
#endif

namespace xb {
namespace {

class CudaDeviceTest : public ::testing::Test {
protected:
    void SetUp() override {
#if !defined(XB_HAVE_CUDA)
        XB_SKIP_WITHOUT_GPU("built without CUDA");
#else
        const cuda::CudaAvailability available = cuda::cuda_availability();
        if (available.device_count == 0) XB_SKIP_WITHOUT_GPU("no CUDA device: " << available.reason);
        device_ = global_registry().dev_by_name("CUDA0");
        ASSERT_NE(device_, nullptr) << "the runtime reports a GPU but CUDA0 is not registered";
        auto b = device_->init_backend();
        ASSERT_TRUE(b.is_ok()) << b.status().to_string();
        backend_ = std::move(b).value();
        auto c = global_registry().init_by_name("CPU");
        ASSERT_TRUE(c.is_ok()) << c.status().to_string();
        cpu_ = std::move(c).value();
#endif
    }

    Device* device_ = nullptr;
    std::unique_ptr<Backend> backend_;
    std::unique_ptr<Backend> cpu_;
};

using xbt::uniform_values;

double nmse(const std::vector<float>& out, const std::vector<float>& ref) {
    double err = 0.0, norm = 0.0;
    for (size_t i = 0; i < ref.size(); ++i) {
        err += (static_cast<double>(out[i]) - ref[i]) * (static_cast<double>(out[i]) - ref[i]);
        norm += static_cast<double>(ref[i]) * ref[i];
    }
    return norm > 0.0 ? err / norm : err;
}

// Builds a graph in `ctx`, listing its float inputs (filled with seeded values), and returns its output.
using BuildFn = std::function<Tensor*(Context& ctx, std::vector<Tensor*>& inputs)>;

// The output of the graph computed on `backend`, every tensor in one buffer of the backend.
Result<std::vector<float>> compute_on(Backend& backend, const BuildFn& build) {
    Context ctx;
    std::vector<Tensor*> inputs;
    Tensor* out = build(ctx, inputs);
    out->set_output();
    XB_ASSIGN_OR_RETURN(Graph graph, Graph::build({out}));
    XB_ASSIGN_OR_RETURN(auto buffer, alloc_ctx_tensors(ctx, backend));
    for (size_t i = 0; i < inputs.size(); ++i) {
        XB_RETURN_IF_ERROR(tensor_set_f32(*inputs[i], uniform_values(static_cast<size_t>(inputs[i]->nelements()),
                                                                     static_cast<uint32_t>(17 + i))));
    }
    XB_RETURN_IF_ERROR(backend.graph_compute(graph));
    return tensor_get_f32(*out);
}

// The graph on the GPU against the CPU: NMSE at most `tolerance`, and the same non-finite values.
void expect_matches_cpu(Backend& gpu, Backend& cpu, const BuildFn& build, double tolerance) {
    auto got = compute_on(gpu, build);
    auto want = compute_on(cpu, build);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    ASSERT_TRUE(want.is_ok()) << want.status().to_string();
    ASSERT_EQ(got->size(), want->size());
    for (size_t i = 0; i < want->size(); ++i) {
        if (!std::isfinite((*want)[i])) {
            ASSERT_EQ(std::isnan((*got)[i]), std::isnan((*want)[i])) << i;
        }
    }
    EXPECT_LE(nmse(*got, *want), tolerance);
}

// --- the device ------------------------------------------------------------------------------------

TEST_F(CudaDeviceTest, PropertiesDescribeTheGpu) {
    const DeviceProps p = device_->props();
    EXPECT_EQ(p.name, "CUDA0");
    EXPECT_EQ(p.type, DeviceType::GPU);
    EXPECT_FALSE(device_->is_simulated());
    EXPECT_FALSE(p.description.empty());
    EXPECT_GT(p.memory_total, 0u);
    EXPECT_GT(p.memory_free, 0u);
    EXPECT_LE(p.memory_free, p.memory_total);
    EXPECT_TRUE(p.caps.async);
    EXPECT_TRUE(p.caps.host_buffer);
    EXPECT_TRUE(p.caps.events);
    EXPECT_EQ(device_->settings(), "offload_min_batch=32,tf32=0,graphs=1");
    EXPECT_EQ(global_registry().init_best().value()->device().type(), DeviceType::GPU);
}

TEST_F(CudaDeviceTest, OutOfMemoryIsAStatusWithTheSizes) {
    auto huge = device_->buffer_type().alloc_buffer(size_t{1} << 60);
    ASSERT_FALSE(huge.is_ok());
    EXPECT_EQ(huge.status().code(), StatusCode::OutOfMemory);
    EXPECT_NE(huge.status().message().find("1152921504606846976 bytes"), std::string::npos) << huge.status().message();
    EXPECT_NE(huge.status().message().find("free"), std::string::npos) << huge.status().message();
    // The failure leaves nothing behind: the next allocation and computation work.
    auto small = device_->buffer_type().alloc_buffer(4096);
    EXPECT_TRUE(small.is_ok()) << small.status().to_string();
    expect_matches_cpu(*backend_, *cpu_, [](Context& ctx, std::vector<Tensor*>& in) {
        in.push_back(ctx.new_tensor(DType::F32, {100}));
        return relu(ctx, in[0]);
    }, 0.0);
}

TEST_F(CudaDeviceTest, SettingsAndOffloadThreshold) {
    xbt::LocalRegistry local;  // the settings changed here stay with this test
    Device* device = local.device("CUDA0");
    ASSERT_NE(device, nullptr);
    Context ctx;
    Tensor* w = ctx.new_tensor(DType::F16, {64, 64});
    Tensor* x31 = ctx.new_tensor(DType::F32, {64, 31});
    Tensor* x32 = ctx.new_tensor(DType::F32, {64, 32});
    EXPECT_FALSE(device->offload_op(*mul_mat(ctx, w, x31)));
    EXPECT_TRUE(device->offload_op(*mul_mat(ctx, w, x32)));
    EXPECT_FALSE(device->offload_op(*get_rows(ctx, w, ctx.new_tensor(DType::I32, {64}))));
    ASSERT_TRUE(device->configure("offload_min_batch=8").is_ok());
    EXPECT_TRUE(device->offload_op(*mul_mat(ctx, w, x31)));
    EXPECT_FALSE(device->configure("offload_min_batch=-3").is_ok());
    EXPECT_TRUE(device->init_backend("tf32=1").is_ok());
    auto unknown = device->init_backend("colour=blue");
    ASSERT_FALSE(unknown.is_ok());
    EXPECT_EQ(unknown.status().code(), StatusCode::InvalidArgument);
}

// --- buffers ---------------------------------------------------------------------------------------

TEST_F(CudaDeviceTest, PinnedHostBuffersServeTheCpuAndCopies) {
    BufferType* host = device_->host_buffer_type();
    ASSERT_NE(host, nullptr);
    EXPECT_TRUE(host->is_host());
    EXPECT_TRUE(cpu_->supports_buft(*host));
    EXPECT_FALSE(backend_->supports_buft(*host)) << "kernels read device memory only";

    Context ctx;
    Tensor* a = ctx.new_tensor(DType::F32, {37, 3});
    Tensor* y = scale(ctx, a, 2.0f);
    auto pinned = alloc_ctx_tensors(ctx, *host);
    ASSERT_TRUE(pinned.is_ok()) << pinned.status().to_string();
    const std::vector<float> values = uniform_values(111, 3);
    ASSERT_TRUE(tensor_set_f32(*a, values).is_ok());
    auto g = Graph::build({y});
    ASSERT_TRUE(g.is_ok());
    ASSERT_TRUE(cpu_->graph_compute(*g).is_ok()) << "the CPU computes in pinned memory";

    // Pinned -> device -> pinned, synchronously and asynchronously.
    Context dctx;
    Tensor* d = dctx.new_tensor(DType::F32, {37, 3});
    auto dev = alloc_ctx_tensors(dctx, *backend_);
    ASSERT_TRUE(dev.is_ok());
    ASSERT_TRUE(tensor_copy(*y, *d).is_ok());
    std::vector<float> back(111);
    ASSERT_TRUE(tensor_get_async(*backend_, *d, back.data(), 0, d->nbytes()).is_ok());
    backend_->synchronize();
    ASSERT_TRUE(backend_->take_async_error().is_ok());
    for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(back[i], 2.0f * values[i]) << i;
    ASSERT_TRUE(tensor_copy(*d, *a).is_ok());  // device -> pinned
    auto again = tensor_get_f32(*a);
    ASSERT_TRUE(again.is_ok());
    EXPECT_EQ(*again, back);
}

// Weights in pinned memory upload on the backend's stream (cpy_tensor_async takes them); pageable
// weights and pinned compute memory are left to the scheduler's synchronous copy.
TEST_F(CudaDeviceTest, PinnedWeightsUploadOnTheBackendStream) {
    BufferType* host = device_->host_buffer_type();
    ASSERT_NE(host, nullptr);
    EXPECT_TRUE(host->is_pinned());
    EXPECT_FALSE(device_->buffer_type().is_pinned());
    const std::optional<double> link = device_->host_link_gbps();
    ASSERT_TRUE(link.has_value()) << "the pinned upload probe runs on any GPU with 128 MiB free";
    EXPECT_GT(*link, 1.0);
    EXPECT_LT(*link, 2000.0);
    EXPECT_EQ(device_->host_link_gbps(), link) << "measured once";

    Context wctx, pctx, cctx, dctx;
    Tensor* w = wctx.new_tensor(DType::F32, {1 << 20});
    Tensor* pageable = pctx.new_tensor(DType::F32, {1 << 20});
    Tensor* compute = cctx.new_tensor(DType::F32, {1 << 20});
    Tensor* d = dctx.new_tensor(DType::F32, {1 << 20});
    auto wb = alloc_ctx_tensors(wctx, *host);
    auto pb = alloc_ctx_tensors(pctx, *cpu_);
    auto cb = alloc_ctx_tensors(cctx, *host);
    auto db = alloc_ctx_tensors(dctx, *backend_);
    ASSERT_TRUE(wb.is_ok() && pb.is_ok() && cb.is_ok() && db.is_ok());
    (*wb)->set_usage(BufferUsage::Weights);
    (*pb)->set_usage(BufferUsage::Weights);
    const std::vector<float> values = uniform_values(1 << 20, 12);
    ASSERT_TRUE(tensor_set_f32(*w, values).is_ok());
    EXPECT_TRUE(backend_->cpy_tensor_async(*cpu_, *w, *d));
    backend_->synchronize();
    ASSERT_TRUE(backend_->take_async_error().is_ok());
    EXPECT_EQ(tensor_get_f32(*d).value(), values);
    EXPECT_FALSE(backend_->cpy_tensor_async(*cpu_, *pageable, *d)) << "pageable memory: the synchronous path";
    EXPECT_FALSE(backend_->cpy_tensor_async(*cpu_, *compute, *d)) << "pinned compute memory the CPU may reuse";
}

// The offload placement (half the layers on the GPU) keeps the host's weights in CUDA0_Host, and
// the CPU's compute buffer there too; every host copy then reads or writes pinned memory, and the
// profile sets each copy's rate beside the measured link. --host-weights pageable gives the CPU's
// own memory, with the same results.
TEST_F(CudaDeviceTest, OffloadPlacementPutsHostWeightsInPinnedMemory) {
    const std::string text = R"({"seed": 5, "graph": {"model": "llama_decoder", "params": {"n_layers": 4, "n_embd": 256,
        "n_head": 4, "n_ff": 512, "n_tokens": 32, "n_vocab": 1000}},
        "placement": {"backends": ["CUDA0", "CPU"], "offload_layers": 2}})";
    auto run = [&](config::HostWeights host) -> Result<std::unique_ptr<config::testing::Placed>> {
        XB_ASSIGN_OR_RETURN(config::ConfigSpec spec, config::parse_config(text, "offload.json"));
        config::BuildOptions options;
        options.host_weights = host;
        XB_ASSIGN_OR_RETURN(config::Model model, config::build_model(spec, global_registry(), options));
        return config::testing::compute_scheduled(std::move(model), global_registry(), true);
    };
    auto pinned = run(config::HostWeights::Pinned);
    ASSERT_TRUE(pinned.is_ok()) << pinned.status().to_string();
    EXPECT_EQ((*pinned)->model.placement.host_buffer_device, "CUDA0");
    for (const config::WeightPlacement& wp : (*pinned)->model.placement.weights) {
        const BufferType& type = storage_buffer(*wp.tensor)->type();
        if (wp.device == "CPU") {
            EXPECT_EQ(&type, device_->host_buffer_type()) << wp.tensor->name;
            EXPECT_TRUE(type.is_pinned()) << wp.tensor->name;
        } else {
            EXPECT_EQ(&type, &device_->buffer_type()) << wp.tensor->name;
        }
    }
    const SchedReport& r = (*pinned)->sched->report();
    size_t host_copies = 0;
    for (const SplitReport& split : r.splits) {
        for (const SplitInputReport& in : split.inputs) {
            if (in.host_memory == HostMemory::None) continue;
            ++host_copies;
            EXPECT_EQ(in.host_memory, HostMemory::Pinned) << in.name;
            EXPECT_GT(in.achieved_gbps(), 0.0) << in.name;
            EXPECT_EQ(in.link_gbps, device_->host_link_gbps().value_or(-1)) << in.name;
        }
    }
    EXPECT_GT(host_copies, 0u) << "the offloaded batch-32 products copy the host's weights";
    auto pageable = run(config::HostWeights::Pageable);
    ASSERT_TRUE(pageable.is_ok()) << pageable.status().to_string();
    for (const config::WeightPlacement& wp : (*pageable)->model.placement.weights) {
        if (wp.device == "CPU") {
            EXPECT_FALSE(storage_buffer(*wp.tensor)->type().is_pinned()) << wp.tensor->name;
        }
    }
    auto a = tensor_get_f32(*(*pinned)->model.outputs[0]);
    auto b = tensor_get_f32(*(*pageable)->model.outputs[0]);
    ASSERT_TRUE(a.is_ok() && b.is_ok());
    EXPECT_LE(nmse(*a, *b), 1e-12) << "the same kernels on the same values, wherever the host keeps them";
}

TEST_F(CudaDeviceTest, BuffersOverCallerMemory) {
    if (!device_->caps().buffer_from_host_ptr) {
        auto refused = device_->buffer_from_host_ptr(nullptr, 0, 0);
        EXPECT_EQ(refused.status().code(), StatusCode::NotSupported);
        GTEST_SKIP() << "this system cannot register host memory";
    }
    alignas(64) static float storage[1024] = {};
    auto buf = device_->buffer_from_host_ptr(storage, sizeof storage, sizeof storage);
    ASSERT_TRUE(buf.is_ok()) << buf.status().to_string();
    EXPECT_TRUE((*buf)->is_host());
    Context ctx;
    Tensor* t = ctx.new_tensor(DType::F32, {1024});
    ASSERT_TRUE(LinearAllocator(**buf).alloc(*t).is_ok());
    const std::vector<float> v = uniform_values(1024, 5);
    ASSERT_TRUE(tensor_set(*t, v.data(), 0, t->nbytes()).is_ok());
    EXPECT_EQ(storage[7], v[7]) << "the buffer writes the caller's memory";
    EXPECT_FALSE(device_->buffer_from_host_ptr(reinterpret_cast<std::byte*>(storage) + 4, 64, 64).is_ok());
}

// --- streams, copies, events -------------------------------------------------------------------------

// src = x * 3 on one stream, copied to another stream (and GPU) that computes dst = src + 1.
void expect_copy_between(Backend& from, Backend& to) {
    Context ctx_a;
    Tensor* x = ctx_a.new_tensor(DType::F32, {4096});
    Tensor* src = scale(ctx_a, x, 3.0f);
    auto ga = Graph::build({src});
    auto buf_a = alloc_ctx_tensors(ctx_a, from);
    Context ctx_b;
    Tensor* copy = ctx_b.new_tensor(DType::F32, {4096});
    Tensor* dst = scale(ctx_b, copy, 1.0f, 1.0f);
    auto gb = Graph::build({dst});
    auto buf_b = alloc_ctx_tensors(ctx_b, to);
    ASSERT_TRUE(ga.is_ok() && gb.is_ok() && buf_a.is_ok() && buf_b.is_ok());
    const std::vector<float> values = uniform_values(4096, 9);
    ASSERT_TRUE(tensor_set_f32(*x, values).is_ok());
    for (int round = 0; round < 3; ++round) {
        ASSERT_TRUE(from.graph_compute_async(*ga).is_ok());
        ASSERT_TRUE(tensor_copy_async(from, to, *src, *copy).is_ok());
        ASSERT_TRUE(to.graph_compute_async(*gb).is_ok());
        to.synchronize();
        from.synchronize();
        ASSERT_TRUE(to.take_async_error().is_ok());
        ASSERT_TRUE(from.take_async_error().is_ok());
        auto out = tensor_get_f32(*dst);
        ASSERT_TRUE(out.is_ok());
        for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ((*out)[i], values[i] * 3.0f + 1.0f) << i;
    }
}

TEST_F(CudaDeviceTest, CopiesBetweenStreamsOfOneGpu) {
    auto other = device_->init_backend();
    ASSERT_TRUE(other.is_ok()) << other.status().to_string();
    expect_copy_between(*backend_, **other);
    expect_copy_between(**other, *backend_);
}

TEST_F(CudaDeviceTest, CopiesBetweenGpus) {
    Device* second = global_registry().dev_by_name("CUDA1");
    if (second == nullptr) GTEST_SKIP() << "one GPU only: no peer copies to test";
    auto other = second->init_backend();
    ASSERT_TRUE(other.is_ok()) << other.status().to_string();
    expect_copy_between(*backend_, **other);
    expect_copy_between(**other, *backend_);
    // Synchronous copies between the two GPUs' buffers go through Buffer::copy_tensor.
    Context ctx;
    Tensor* a = ctx.new_tensor(DType::F32, {333});
    Context ctx2;
    Tensor* b = ctx2.new_tensor(DType::F32, {333});
    auto ba = alloc_ctx_tensors(ctx, *backend_);
    auto bb = alloc_ctx_tensors(ctx2, **other);
    ASSERT_TRUE(ba.is_ok() && bb.is_ok());
    const std::vector<float> v = uniform_values(333, 4);
    ASSERT_TRUE(tensor_set_f32(*a, v).is_ok());
    ASSERT_TRUE(tensor_copy(*a, *b).is_ok());
    EXPECT_EQ(tensor_get_f32(*b).value(), v);
}

TEST_F(CudaDeviceTest, EventsRecordWaitAndRefuseOtherBackends) {
    auto event = device_->event_new();
    ASSERT_TRUE(event.is_ok()) << event.status().to_string();
    EXPECT_TRUE((*event)->synchronize().is_ok()) << "never recorded: returns at once";
    auto other = device_->init_backend();
    ASSERT_TRUE(other.is_ok());
    EXPECT_TRUE((*event)->record(*backend_).is_ok());
    EXPECT_TRUE((*event)->wait(**other).is_ok());
    EXPECT_TRUE((*event)->wait(*cpu_).is_ok()) << "the CPU waits on the host";
    EXPECT_TRUE((*event)->synchronize().is_ok());
    const Status on_cpu = (*event)->record(*cpu_);
    EXPECT_EQ(on_cpu.code(), StatusCode::InvalidArgument);
}

// --- errors ------------------------------------------------------------------------------------------

TEST_F(CudaDeviceTest, IndexOutOfRangeIsReportedWithTheNodeAndCleared) {
    Context ctx;
    Tensor* table = ctx.new_tensor(DType::F32, {16, 9});
    Tensor* rows = ctx.new_tensor(DType::I32, {4});
    Tensor* y = get_rows(ctx, table, rows);
    y->name = "picked";
    auto g = Graph::build({y});
    auto buf = alloc_ctx_tensors(ctx, *backend_);
    ASSERT_TRUE(g.is_ok() && buf.is_ok());
    ASSERT_TRUE(tensor_set_f32(*table, uniform_values(144, 1)).is_ok());
    const int32_t bad[4] = {1, 20, 3, 4};
    ASSERT_TRUE(tensor_set(*rows, bad, 0, sizeof bad).is_ok());
    const Status s = backend_->graph_compute(*g);
    EXPECT_EQ(s.code(), StatusCode::OutOfRange);
    EXPECT_NE(s.message().find("index 20 out of range [0, 9)"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("picked"), std::string::npos) << s.message();

    const int32_t good[4] = {1, 2, 3, 8};
    ASSERT_TRUE(tensor_set(*rows, good, 0, sizeof good).is_ok());
    EXPECT_TRUE(backend_->graph_compute(*g).is_ok()) << "the error was reported once and cleared";
}

TEST_F(CudaDeviceTest, TensorsOutsideTheGpuAreRefusedBeforeAnyKernelRuns) {
    Context ctx;
    Tensor* a = ctx.new_tensor(DType::F32, {64});
    Tensor* y = relu(ctx, a);
    auto g = Graph::build({y});
    ASSERT_TRUE(g.is_ok());
    auto host = alloc_tensors(std::vector<Tensor*>{a}, cpu_->default_buffer_type());
    auto dev = alloc_tensors(std::vector<Tensor*>{y}, backend_->default_buffer_type());
    ASSERT_TRUE(host.is_ok() && dev.is_ok());
    const Status s = backend_->graph_compute(*g);
    EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
    EXPECT_NE(s.message().find("own memory"), std::string::npos) << s.message();
    // The device is still healthy.
    expect_matches_cpu(*backend_, *cpu_, [](Context& c, std::vector<Tensor*>& in) {
        in.push_back(c.new_tensor(DType::F32, {100}));
        return relu(c, in[0]);
    }, 0.0);
}

// --- the scheduler ---------------------------------------------------------------------------------

// A small MLP with weights in a CPU weights buffer.
struct Mlp {
    Context ctx;
    Tensor* x = nullptr;
    Tensor* product = nullptr;  // the first mul_mat
    Tensor* y = nullptr;
    Graph graph;
    std::unique_ptr<MultiBuffer> weights;
};

std::unique_ptr<Mlp> make_mlp(Backend& cpu) {
    auto m = std::make_unique<Mlp>();
    m->x = m->ctx.new_tensor(DType::F32, {128, 64});
    m->x->set_input();
    Tensor* w1 = m->ctx.new_tensor(DType::F16, {128, 256});
    Tensor* w2 = m->ctx.new_tensor(DType::F32, {256, 96});
    m->product = mul_mat(m->ctx, w1, m->x);
    m->y = mul_mat(m->ctx, w2, gelu(m->ctx, m->product));
    m->y->set_output();
    auto g = Graph::build({m->y});
    auto w = alloc_tensors(std::vector<Tensor*>{w1, w2}, cpu.default_buffer_type());
    if (!g.is_ok() || !w.is_ok()) return nullptr;
    m->graph = std::move(g).value();
    m->weights = std::move(w).value();
    m->weights->set_usage(BufferUsage::Weights);
    if (!tensor_set_f32(*w1, uniform_values(128 * 256, 11, -0.1f, 0.1f)).is_ok() ||
        !tensor_set_f32(*w2, uniform_values(256 * 96, 12, -0.1f, 0.1f)).is_ok()) {
        return nullptr;
    }
    return m;
}

// A weight split by rows multiplies like the whole weight. The split is over CUDA0 twice, so that
// one GPU runs every step of the several-GPU path (a lane per device, the activations handed over,
// each slice's product, the rows gathered into the node) but the peer copies between two GPUs.
TEST_F(CudaDeviceTest, RowSplitWeightMultipliesLikeTheWholeWeight) {
    for (const DType type : {DType::F32, DType::F16}) {
        SCOPED_TRACE(dtype_name(type));
        RowSplitBufferType rows({device_, device_}, {1.0, 2.0});
        ASSERT_TRUE(device_->supports_buft(rows));
        const std::vector<float> wv = uniform_values(64 * 100, 21, -0.5f, 0.5f);
        const std::vector<float> xv = uniform_values(64 * 7, 22);
        auto product = [&](Backend& backend, BufferType& weights) -> std::vector<float> {
            Context ctx;
            Tensor* w = ctx.new_tensor(type, {64, 100});
            Tensor* x = ctx.new_tensor(DType::F32, {64, 7});
            Tensor* y = mul_mat(ctx, w, x);
            auto wbuf = alloc_tensors(std::vector<Tensor*>{w}, weights);
            auto rest = alloc_tensors(std::vector<Tensor*>{x, y}, backend.default_buffer_type());
            EXPECT_TRUE(wbuf.is_ok() && rest.is_ok());
            if (!wbuf.is_ok() || !rest.is_ok()) return {};
            EXPECT_TRUE(tensor_set_f32(*w, wv).is_ok());
            EXPECT_TRUE(tensor_set_f32(*x, xv).is_ok());
            if (&weights == &rows) {
                const auto* slices = row_split_storage(*w)->slices(*w);
                EXPECT_TRUE(slices != nullptr && slices->size() == 2u);
            }
            auto g = Graph::build({y});
            EXPECT_TRUE(g.is_ok());
            const Status s = backend.graph_compute(*g);
            EXPECT_TRUE(s.is_ok()) << s.to_string();
            auto values = tensor_get_f32(*y);
            return values.is_ok() ? std::move(values).value() : std::vector<float>{};
        };
        const std::vector<float> got = product(*backend_, rows);
        const std::vector<float> want = product(*cpu_, cpu_->default_buffer_type());
        ASSERT_EQ(got.size(), want.size());
        ASSERT_FALSE(got.empty());
        EXPECT_LT(report::compare(got, want).nmse, 5e-4) << "NMSE against the whole weight on the CPU (mul_mat's tolerance)";
    }
}

// The GPU takes the batch-64 products of weights on the CPU (offload_op); the scheduler copies the
// weights and activations between the two, with two pipelined copies of every split input.
TEST_F(CudaDeviceTest, SchedulerWithPipelinedCopiesMatchesTheCpu) {
    auto on_gpu = make_mlp(*cpu_);
    auto on_cpu = make_mlp(*cpu_);
    ASSERT_TRUE(on_gpu != nullptr && on_cpu != nullptr);
    SchedulerOptions options;
    options.n_copies = 2;
    auto sched = Scheduler::create({backend_.get(), cpu_.get()}, {}, options);
    ASSERT_TRUE(sched.is_ok()) << sched.status().to_string();
    auto reference = Scheduler::create({cpu_.get()});
    ASSERT_TRUE(reference.is_ok());
    ASSERT_TRUE((*sched)->alloc_graph(on_gpu->graph).is_ok());
    ASSERT_TRUE((*reference)->alloc_graph(on_cpu->graph).is_ok());
    EXPECT_EQ((*sched)->tensor_backend(*on_gpu->product), backend_.get()) << "offloaded from the CPU weights";
    for (int round = 0; round < 3; ++round) {
        const std::vector<float> input = uniform_values(128 * 64, 100 + round);
        ASSERT_TRUE(tensor_set_f32(*on_gpu->x, input).is_ok());
        ASSERT_TRUE(tensor_set_f32(*on_cpu->x, input).is_ok());
        const Status s = (*sched)->graph_compute(on_gpu->graph);
        ASSERT_TRUE(s.is_ok()) << s.to_string();
        ASSERT_TRUE((*reference)->graph_compute(on_cpu->graph).is_ok());
        auto gpu = tensor_get_f32(*on_gpu->y);
        auto ref = tensor_get_f32(*on_cpu->y);
        ASSERT_TRUE(gpu.is_ok() && ref.is_ok());
        EXPECT_LE(nmse(*gpu, *ref), 1e-5);  // the f16 product rounds its activations to f16, as ggml
    }
}

// --- larger problems than the conformance cases ------------------------------------------------------

TEST_F(CudaDeviceTest, LargeMatMulsMatchTheCpu) {
    struct Def {
        DType weights;
        double tolerance;
    };
    for (const Def d : {Def{DType::F32, 1e-10}, Def{DType::F16, 1e-6}, Def{DType::BF16, 3e-5}}) {
        SCOPED_TRACE(dtype_name(d.weights));
        expect_matches_cpu(*backend_, *cpu_, [&](Context& ctx, std::vector<Tensor*>& in) {
            in.push_back(ctx.new_tensor(d.weights, {1024, 384, 2, 1}));
            in.push_back(ctx.new_tensor(DType::F32, {1024, 67, 4, 3}));  // broadcast over both batch dims
            return mul_mat(ctx, in[0], in[1]);
        }, d.tolerance);
    }
    expect_matches_cpu(*backend_, *cpu_, [](Context& ctx, std::vector<Tensor*>& in) {
        in.push_back(ctx.new_tensor(DType::F32, {200, 300}));
        in.push_back(ctx.new_tensor(DType::F32, {64, 300}));
        return out_prod(ctx, in[0], in[1]);
    }, 1e-10);
}

TEST_F(CudaDeviceTest, LongRowsAndManyRowsMatchTheCpu) {
    // Rows longer than a block (grid-stride within the row) and more rows than blocks.
    expect_matches_cpu(*backend_, *cpu_, [](Context& ctx, std::vector<Tensor*>& in) {
        in.push_back(ctx.new_tensor(DType::F32, {5000, 3}));
        return soft_max(ctx, in[0]);
    }, 1e-10);
    expect_matches_cpu(*backend_, *cpu_, [](Context& ctx, std::vector<Tensor*>& in) {
        in.push_back(ctx.new_tensor(DType::F32, {33, 70000}));
        return rms_norm(ctx, in[0], 1e-6f);
    }, 1e-10);
    expect_matches_cpu(*backend_, *cpu_, [](Context& ctx, std::vector<Tensor*>& in) {
        in.push_back(ctx.new_tensor(DType::F32, {3000, 700}));
        return sum(ctx, in[0]);
    }, 1e-10);
    expect_matches_cpu(*backend_, *cpu_, [](Context& ctx, std::vector<Tensor*>& in) {
        in.push_back(ctx.new_tensor(DType::F32, {4099, 65}));
        return argmax(ctx, in[0]);
    }, 0.0);
    // More elements than the grid covers in one pass.
    expect_matches_cpu(*backend_, *cpu_, [](Context& ctx, std::vector<Tensor*>& in) {
        in.push_back(ctx.new_tensor(DType::F16, {4096, 4500}));
        return silu(ctx, in[0]);
    }, 1e-6);
}

TEST_F(CudaDeviceTest, FlashAttentionOnALongContextMatchesTheCpu) {
    expect_matches_cpu(*backend_, *cpu_, [](Context& ctx, std::vector<Tensor*>& in) {
        in.push_back(ctx.new_tensor(DType::F32, {128, 9, 8, 1}));
        in.push_back(ctx.new_tensor(DType::F16, {128, 700, 2, 1}));
        in.push_back(ctx.new_tensor(DType::F16, {128, 700, 2, 1}));
        in.push_back(ctx.new_tensor(DType::F16, {700, 9}));
        return flash_attn_ext(ctx, in[0], in[1], in[2], in[3], 1.0f / std::sqrt(128.0f));
    }, 1e-6);
}

// The sigmoid family on the GPU (op_math.hpp's fast forms: __expf and a hardware reciprocal)
// against float64, value by value over the range where the results stay normal floats. Bound:
// __expf's documented 2 + floor(1.173 |t|) ulp at its argument t, plus 4 ulp for the other
// roundings, plus t's own rounding amplified (the f32 definitions have it too).
// The measured worst cases are recorded as properties (gpu-check keeps them in its logs).
TEST_F(CudaDeviceTest, FastActivationsStayWithinTheirUlpBound) {
    struct Form {
        const char* name;
        UnaryOp op;
        double (*ref)(double);
        double lo, hi;
        double (*exp_arg)(double);  // the argument t of the exp the GPU computes
        double amplification;       // ulp per unit of |t| from t's own f32 rounding (test_fast_activations.cpp)
    };
    const Form forms[] = {
        {"silu", UnaryOp::Silu, [](double x) { return x / (1.0 + std::exp(-x)); }, -30, 30,
         [](double x) { return -x; }, 0.0},
        {"sigmoid", UnaryOp::Sigmoid, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, -30, 30,
         [](double x) { return -x; }, 0.0},
        // The ops' own f32 constants; GELU as x * sigmoid(2y), which float64's tanh form cancels.
        {"gelu_quick", UnaryOp::GeluQuick,
         [](double x) { return x / (1.0 + std::exp(-static_cast<double>(1.702f) * x)); }, -30, 30,
         [](double x) { return -1.702 * x; }, 1.0},
        {"gelu", UnaryOp::Gelu,
         [](double x) {
             const double y = static_cast<double>(0.79788456f) * x * (1.0 + static_cast<double>(0.044715f) * x * x);
             return x / (1.0 + std::exp(-2.0 * y));
         },
         -9, 9, [](double x) { return -2.0 * 0.79788456 * x * (1.0 + 0.044715 * x * x); }, 3.0},
    };
    constexpr int64_t kValues = 60001;
    for (const Form& f : forms) {
        SCOPED_TRACE(f.name);
        std::vector<float> x(kValues);
        for (int64_t i = 0; i < kValues; ++i) x[static_cast<size_t>(i)] = static_cast<float>(f.lo + (f.hi - f.lo) * i / (kValues - 1));
        Context ctx;
        Tensor* in = ctx.new_tensor(DType::F32, {kValues});
        Tensor* out = unary(ctx, in, f.op);
        out->set_output();
        auto graph = Graph::build({out});
        ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
        auto buffer = alloc_ctx_tensors(ctx, *backend_);
        ASSERT_TRUE(buffer.is_ok()) << buffer.status().to_string();
        ASSERT_TRUE(tensor_set_f32(*in, x).is_ok());
        ASSERT_TRUE(backend_->graph_compute(*graph).is_ok());
        auto got = tensor_get_f32(*out);
        ASSERT_TRUE(got.is_ok()) << got.status().to_string();
        double worst = 0.0;
        for (size_t i = 0; i < x.size(); ++i) {
            const double want = f.ref(x[i]);
            const auto w = static_cast<float>(want);
            const float spacing = std::nextafter(std::fabs(w), INFINITY) - std::fabs(w);
            const double ulps = std::fabs(static_cast<double>((*got)[i]) - want) / spacing;
            const double t = std::fabs(f.exp_arg(x[i]));
            const double bound = 2.0 + std::floor(1.173 * t) + 4.0 + f.amplification * t;
            worst = std::max(worst, ulps);
            ASSERT_LE(ulps, bound) << "x = " << x[i] << ": " << (*got)[i] << " against " << want;
        }
        RecordProperty(std::string(f.name) + "_max_ulp", std::to_string(worst));
    }
}

}  // namespace
}  // namespace xb
