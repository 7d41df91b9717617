// The guard bytes of lib/opcheck (guarded_buffer.hpp) catch writes outside a tensor: directly, by
// corrupting host memory next to a tensor, and through the case runner, with a backend whose
// kernel writes one element past its output.
#include <cmath>
#include <cstring>

#include "alloc/context_alloc.hpp"
#include "backend/registry.hpp"
#include "builtin/builtin_backends.hpp"
#include "backend/tensor_io.hpp"
#include "op_test_util.hpp"

namespace xbt {

namespace {

using xb::DType;
using xb::Tensor;

std::unique_ptr<xb::Backend> cpu_backend() {
    auto backend = xb::global_registry().init_by_name("CPU");
    EXPECT_TRUE(backend.is_ok()) << backend.status().to_string();
    return backend.is_ok() ? std::move(*backend) : nullptr;
}

// Two tensors [a][b] in guarded CPU memory.
struct TwoTensors {
    xb::Context ctx;
    Tensor* a = ctx.new_tensor(DType::F32, {13, 3});
    Tensor* b = ctx.new_tensor(DType::F16, {7});
};

TEST(OpGuards, IntactGuardsReportNothing) {
    TwoTensors t;
    auto cpu = cpu_backend();
    ASSERT_NE(cpu, nullptr);
    auto memory = GuardedBuffer::allocate(t.ctx, cpu->default_buffer_type());
    ASSERT_TRUE(memory.is_ok()) << memory.status().to_string();
    EXPECT_EQ(memory->guard_count(), 3u);
    // Writing a whole tensor, as a correct kernel does, touches no guard.
    std::vector<float> ones(39, 1.0f);
    ASSERT_TRUE(xb::tensor_set_f32(*t.a, ones));
    auto overrun = memory->find_overrun();
    ASSERT_TRUE(overrun.is_ok()) << overrun.status().to_string();
    EXPECT_EQ(*overrun, "");
}

TEST(OpGuards, UnwrittenOutputsReadAsNaN) {
    TwoTensors t;
    auto cpu = cpu_backend();
    ASSERT_NE(cpu, nullptr);
    auto memory = GuardedBuffer::allocate(t.ctx, cpu->default_buffer_type());
    ASSERT_TRUE(memory.is_ok()) << memory.status().to_string();
    auto values = xb::tensor_get_f32(*t.b);
    ASSERT_TRUE(values.is_ok());
    for (float v : *values) EXPECT_TRUE(std::isnan(v));
}

TEST(OpGuards, ByteAfterATensorIsCaught) {
    TwoTensors t;
    auto cpu = cpu_backend();
    ASSERT_NE(cpu, nullptr);
    auto memory = GuardedBuffer::allocate(t.ctx, cpu->default_buffer_type());
    ASSERT_TRUE(memory.is_ok()) << memory.status().to_string();
    t.a->name = "a";
    static_cast<unsigned char*>(t.a->data)[t.a->nbytes()] = 0;  // one byte past the end
    auto overrun = memory->find_overrun();
    ASSERT_TRUE(overrun.is_ok()) << overrun.status().to_string();
    EXPECT_NE(overrun->find("past the end of 'a'"), std::string::npos) << *overrun;
    EXPECT_NE(overrun->find("byte 0 after it"), std::string::npos) << *overrun;
}

TEST(OpGuards, ByteBeforeATensorIsCaught) {
    TwoTensors t;
    auto cpu = cpu_backend();
    ASSERT_NE(cpu, nullptr);
    auto memory = GuardedBuffer::allocate(t.ctx, cpu->default_buffer_type());
    ASSERT_TRUE(memory.is_ok()) << memory.status().to_string();
    t.b->name = "b";
    static_cast<unsigned char*>(t.b->data)[-1] = 0;
    auto overrun = memory->find_overrun();
    ASSERT_TRUE(overrun.is_ok()) << overrun.status().to_string();
    EXPECT_NE(overrun->find("before the start of 'b'"), std::string::npos) << *overrun;
}

// A CPU backend whose every graph also writes one element past the end of its last node: a
// kernel with an off-by-one, as the runner must see it.
class OverrunningBackend final : public xb::Backend {
public:
    explicit OverrunningBackend(std::unique_ptr<xb::Backend> cpu) : Backend(cpu->device()), cpu_(std::move(cpu)) {}
    const char* name() const override { return "OVERRUN"; }
    xb::Status graph_compute_async(const xb::Graph& graph) override {
        XB_RETURN_IF_ERROR(cpu_->graph_compute(graph));
        Tensor* last = graph.node(graph.n_nodes() - 1);
        auto* end = static_cast<unsigned char*>(last->data) + last->nbytes();
        std::memset(end, 0, xb::type_size(last->type));
        return xb::Status::ok();
    }

private:
    std::unique_ptr<xb::Backend> cpu_;
};

TEST(OpGuards, RunnerReportsAKernelWritingPastItsOutput) {
    auto cpu = cpu_backend();
    ASSERT_NE(cpu, nullptr);
    OverrunningBackend bad(std::move(cpu));
    const OpCase add_case{"add_overrun",
                          [](CaseBuilder& b) {
                              Tensor* x = b.input(DType::F32, {13, 5, 1, 1});
                              return xb::add(b.ctx(), x, b.input(DType::F32, {13, 5, 1, 1}));
                          },
                          [](const std::vector<RefArray>& in) {
                              return exact::binary(in[0], in[1], [](double a, double b) { return a + b; });
                          },
                          kTolF32};
    const CaseRun run = run_case(add_case, bad);
    ASSERT_TRUE(run.status.is_ok()) << run.status.to_string();
    // The output itself is right: only the guard tells that something was written where it must not be.
    EXPECT_TRUE(matches_reference(run.out, run.ref, add_case.tolerance));
    EXPECT_NE(run.overrun.find("past the end of"), std::string::npos) << run.overrun;

    auto good = cpu_backend();
    ASSERT_NE(good, nullptr);
    EXPECT_EQ(run_case(add_case, *good).overrun, "");
}

}  // namespace

}  // namespace xbt
