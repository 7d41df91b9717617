// The F64 device (lib/f64): exact arithmetic on every op case, f32 results kept as doubles, its
// memory held wide, and the errors a user can cause. Its conformance with every other device's
// contract (buffers, tensor I/O, copies) is tests/backend's, and every op case's check against the
// float64 reference is tests/opcheck's: it joins both by being registered.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "alloc/context_alloc.hpp"
#include "backend/host_memory.hpp"
#include "backend/registry.hpp"
#include "backend/tensor_io.hpp"
#include "builtin/builtin_backends.hpp"
#include "core/ops.hpp"
#include "op_test_util.hpp"

namespace xbt {
namespace {

using xb::Backend;
using xb::Context;
using xb::DType;
using xb::Graph;
using xb::global_registry;
using xb::StatusCode;
using xb::Tensor;

std::unique_ptr<Backend> f64_backend() {
    auto b = global_registry().init_by_name("F64");
    EXPECT_TRUE(b.is_ok()) << b.status().to_string();
    return b.is_ok() ? std::move(b).value() : nullptr;
}

// Where the graph rounds nothing, F64 is the reference's arithmetic: its results differ from the
// reference only by the f32 rounding of reading them back (NMSE below u^2 = 3.6e-15) and by the
// order of double sums. A result the graph stores as f16, bf16 or a quantized type is rounded as the
// graph says, within the case's own tolerance.
TEST(F64, EveryOpCaseMatchesTheFloat64ReferenceToItsReadBackRounding) {
    auto backend = f64_backend();
    ASSERT_NE(backend, nullptr);
    int exact = 0;
    for (const OpCase& c : all_cases()) {
        SCOPED_TRACE(c.name);
        auto graph = CaseGraph::build(c);
        ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
        const DType out = graph->output().type;
        const bool rounds = graph->graph().nodes().end() !=
                            std::find_if(graph->graph().nodes().begin(), graph->graph().nodes().end(), [](const Tensor* n) {
                                return n->type != DType::F32 && n->type != DType::I32;
                            });
        const CaseRun run = run_case(c, *backend);
        ASSERT_TRUE(run.unsupported.empty()) << run.unsupported;
        ASSERT_TRUE(run.status.is_ok()) << run.status.to_string();
        ASSERT_TRUE(run.overrun.empty()) << run.overrun;
        if (rounds || out != DType::F32) {
            EXPECT_TRUE(matches_reference(run.out, run.ref, c.tolerance));
        } else {
            EXPECT_TRUE(matches_reference(run.out, run.ref, 1e-14));
            ++exact;
        }
    }
    EXPECT_GT(exact, 300) << "most cases round nothing and must be exact";
}

// a + b - a with b far below a's f32 ulp: an f32 device loses b entirely, F64 keeps it, because
// the sum is held as a double between the two nodes.
TEST(F64, KeepsF32ResultsAsDoublesBetweenNodes) {
    auto backend = f64_backend();
    ASSERT_NE(backend, nullptr);
    Context ctx;
    Tensor* a = ctx.new_tensor(DType::F32, {3});
    Tensor* b = ctx.new_tensor(DType::F32, {3});
    Tensor* diff = xb::sub(ctx, xb::add(ctx, a, b), a);
    auto graph = Graph::build({diff});
    ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
    auto buffer = xb::alloc_ctx_tensors(ctx, *backend);
    ASSERT_TRUE(buffer.is_ok()) << buffer.status().to_string();
    const std::vector<float> big = {1.0f, 1000.0f, -3.0f};
    ASSERT_TRUE(xb::tensor_set_f32(*a, big).is_ok());
    const std::vector<float> tiny = {0x1p-30f, 0x1p-20f, 0x1p-40f};
    ASSERT_TRUE(xb::tensor_set_f32(*b, tiny).is_ok());
    ASSERT_TRUE(backend->graph_compute(*graph).is_ok());
    auto got = xb::tensor_get_f32(*diff);
    ASSERT_TRUE(got.is_ok());
    EXPECT_EQ(*got, tiny);
}

TEST(F64, AnIndexOutOfRangeIsAnErrorNamingTheNode) {
    auto backend = f64_backend();
    ASSERT_NE(backend, nullptr);
    Context ctx;
    Tensor* table = ctx.new_tensor(DType::Q8_0, {32, 4});
    Tensor* rows = ctx.new_tensor(DType::I32, {2});
    Tensor* picked = xb::get_rows(ctx, table, rows);
    picked->name = "picked";
    auto graph = Graph::build({picked});
    ASSERT_TRUE(graph.is_ok());
    auto buffer = xb::alloc_ctx_tensors(ctx, *backend);
    ASSERT_TRUE(buffer.is_ok());
    const int32_t ids[2] = {1, 9};
    ASSERT_TRUE(xb::tensor_set(*rows, ids, 0, sizeof ids).is_ok());
    const xb::Status s = backend->graph_compute(*graph);
    EXPECT_EQ(s.code(), StatusCode::OutOfRange);
    EXPECT_NE(s.message().find("'picked'"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("9 out of range [0, 4)"), std::string::npos) << s.message();
}

// f32 ranges hold whole elements (each becomes a double); the raw types take any byte range, as a
// loader writing a weight in pieces that cut its blocks does.
TEST(F64, ByteAccessConvertsWholeF32ElementsAndTakesAnyRangeOfRawTypes) {
    auto backend = f64_backend();
    ASSERT_NE(backend, nullptr);
    Context ctx;
    Tensor* t = ctx.new_tensor(DType::F32, {4});
    auto buffer = xb::alloc_ctx_tensors(ctx, *backend);
    ASSERT_TRUE(buffer.is_ok());
    const float v[2] = {1.5f, 2.5f};
    EXPECT_EQ(xb::tensor_set(*t, v, 2, 4).code(), StatusCode::InvalidArgument);
    ASSERT_TRUE(xb::tensor_set(*t, v, 4, 8).is_ok());
    float back[2] = {};
    ASSERT_TRUE(xb::tensor_get(*t, back, 4, 8).is_ok());
    EXPECT_EQ(back[0], 1.5f);
    EXPECT_EQ(back[1], 2.5f);

    Context raw_ctx;
    Tensor* blocks = raw_ctx.new_tensor(DType::Q8_0, {64});  // two 34-byte blocks
    auto raw_buffer = xb::alloc_ctx_tensors(raw_ctx, *backend);
    ASSERT_TRUE(raw_buffer.is_ok());
    std::vector<uint8_t> bytes(68);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(3 * i + 1);
    for (const auto& [from, to] : {std::pair{0, 17}, std::pair{17, 40}, std::pair{40, 68}}) {
        ASSERT_TRUE(xb::tensor_set(*blocks, bytes.data() + from, from, static_cast<size_t>(to - from)).is_ok());
    }
    std::vector<uint8_t> read(68);
    ASSERT_TRUE(xb::tensor_get(*blocks, read.data(), 0, read.size()).is_ok());
    EXPECT_EQ(read, bytes);
}

TEST(F64, HoldsHalfTheHostsMemoryAndRefusesMore) {
    xb::Device* dev = global_registry().dev_by_name("F64");
    ASSERT_NE(dev, nullptr);
    EXPECT_EQ(dev->type(), xb::DeviceType::Reference);
    EXPECT_LE(dev->memory().total, xb::physical_memory_bytes() / 2 + 1);
    auto too_big = dev->buffer_type().alloc_buffer(xb::physical_memory_bytes());
    ASSERT_FALSE(too_big.is_ok());
    EXPECT_EQ(too_big.status().code(), StatusCode::OutOfMemory);
    EXPECT_NE(too_big.status().message().find("F64"), std::string::npos) << too_big.status().message();
}

TEST(F64, IsNeverPickedUnlessNamed) {
    auto best = global_registry().init_best();
    ASSERT_TRUE(best.is_ok());
    EXPECT_NE(std::string((*best)->name()), "F64");
}

}  // namespace
}  // namespace xbt
