// Graph allocator: free-block planning, in-place reuse, input/output protection, re-planning
// triggers, several buffer types, failures, and the allocation checker.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "alloc/allocation_checker.hpp"
#include "alloc/allocation_stats.hpp"
#include "alloc/context_alloc.hpp"
#include "alloc/free_block_allocator.hpp"
#include "alloc/graph_allocator.hpp"
#include "alloc/linear_allocator.hpp"
#include "backend/registry.hpp"
#include "builtin/builtin_backends.hpp"
#include "backend/tensor_io.hpp"
#include "core/ops.hpp"

namespace xb {
namespace {

BufferType& cpu_buft() { return global_registry().dev_by_name("CPU")->buffer_type(); }

// A host buffer type with an identity of its own (a second "device" for multi-buffer tests), or
// one that refuses every allocation.
class TestBufferType final : public BufferType {
public:
    TestBufferType(const char* name, bool fail = false) : name_(name), fail_(fail) {}
    const char* name() const override { return name_; }
    Result<std::unique_ptr<Buffer>> alloc_buffer(size_t size) override {
        if (fail_) return Status(StatusCode::OutOfMemory, "test: refusing " + std::to_string(size) + " bytes");
        return cpu_buft().alloc_buffer(size);
    }
    size_t alignment() const override { return cpu_buft().alignment(); }
    bool is_host() const override { return true; }
    Device& device() const override { return cpu_buft().device(); }

private:
    const char* name_;
    bool fail_;
};

TEST(FreeBlockAllocator, BestFitMergeAndPeak) {
    FreeBlockAllocator a(64);
    const size_t x = a.alloc(100);  // 128
    const size_t y = a.alloc(64);
    const size_t z = a.alloc(256);
    EXPECT_EQ(x, 0u);
    EXPECT_EQ(y, 128u);
    EXPECT_EQ(z, 192u);
    EXPECT_EQ(a.peak(), 448u);
    a.free(x, 100);
    a.free(z, 256);  // merges into the tail
    EXPECT_EQ(a.free_block_count(), 2u);
    EXPECT_EQ(a.alloc(64), 0u) << "best fit: the 128-byte hole, not the tail";
    a.free(0, 64);
    a.free(y, 64);  // joins the hole before it and the tail after it
    EXPECT_EQ(a.free_block_count(), 1u);
    EXPECT_EQ(a.alloc(448), 0u);
    EXPECT_EQ(a.peak(), 448u);
}

TEST(FreeBlockAllocator, ManyFreeBlocksHaveNoCap) {
    FreeBlockAllocator a(16);
    std::vector<size_t> offs;
    for (int i = 0; i < 2000; ++i) offs.push_back(a.alloc(16));
    for (size_t i = 0; i < offs.size(); i += 2) a.free(offs[i], 16);  // 1000 separate holes
    EXPECT_GE(a.free_block_count(), 1000u);
    for (size_t i = 1; i < offs.size(); i += 2) a.free(offs[i], 16);
    EXPECT_EQ(a.free_block_count(), 1u);
}

struct Chain {
    Context ctx;
    Tensor* x;
    Tensor* y1;
    Tensor* y2;
    Tensor* y3;
};

// x (input) -> relu -> silu -> scale (output)
std::unique_ptr<Chain> make_chain(int64_t n) {
    auto c = std::make_unique<Chain>();
    c->x = c->ctx.new_tensor(DType::F32, {n});
    c->x->set_input();
    c->y1 = relu(c->ctx, c->x);
    c->y2 = silu(c->ctx, c->y1);
    c->y3 = scale(c->ctx, c->y2, 2.0f);
    c->y3->set_output();
    return c;
}

TEST(GraphAllocator, ReusesParentsInPlaceButNeverTheInput) {
    auto c = make_chain(1000);
    auto g = Graph::build({c->y3});
    ASSERT_TRUE(g.is_ok());
    GraphAllocator galloc(cpu_buft());
    ASSERT_TRUE(galloc.alloc_graph(*g).is_ok());
    EXPECT_NE(c->y1->data, c->x->data) << "the input is never overwritten";
    EXPECT_EQ(c->y2->data, c->y1->data) << "silu runs in place over relu's result";
    EXPECT_EQ(c->y3->data, c->y1->data);
    EXPECT_EQ(galloc.buffer_size(0), 2 * align_up(4000, cpu_buft().alignment()));
    EXPECT_TRUE(check_graph_allocation(*g).is_ok());
}

// Beyond ggml's in-place list: the split GLU (an FFN's gate and up apart) takes over its gate's
// memory, and computes the same values there; the fused form, whose result is half its source's
// width, gets memory of its own.
TEST(GraphAllocator, SplitGluRunsInPlaceOverItsGate) {
    Context ctx;
    Tensor* x = ctx.new_tensor(DType::F32, {64, 3});
    x->set_input();
    Tensor* gate = relu(ctx, x);
    Tensor* up = scale(ctx, x, 0.5f);
    Tensor* act = glu_split(ctx, gate, up, GluOp::SwiGlu);
    Tensor* halves = scale(ctx, x, 2.0f);  // [64, 3]: a fused GLU's [gate | up] rows of 32 + 32
    Tensor* fused = glu(ctx, halves, GluOp::SwiGlu);
    act->set_output();
    fused->set_output();
    auto g = Graph::build({act, fused});
    ASSERT_TRUE(g.is_ok());
    GraphAllocator galloc(cpu_buft());
    ASSERT_TRUE(galloc.alloc_graph(*g).is_ok());
    EXPECT_EQ(act->data, gate->data) << "the split GLU runs in place over its gate";
    EXPECT_NE(fused->data, halves->data) << "the fused GLU's result has another layout";
    EXPECT_TRUE(check_graph_allocation(*g).is_ok());

    std::vector<float> xv(64 * 3);
    for (size_t i = 0; i < xv.size(); ++i) xv[i] = 0.037f * static_cast<float>(i) - 2.9f;
    ASSERT_TRUE(tensor_set_f32(*x, xv).is_ok());
    auto cpu = global_registry().init_by_name("CPU");
    ASSERT_TRUE(cpu.is_ok());
    ASSERT_TRUE((*cpu)->graph_compute(*g).is_ok());
    auto got = tensor_get_f32(*act);
    ASSERT_TRUE(got.is_ok());
    for (size_t i = 0; i < xv.size(); ++i) {
        const double a = std::max(0.0, static_cast<double>(xv[i]));
        const double want = a / (1.0 + std::exp(-a)) * (0.5 * xv[i]);
        EXPECT_NEAR((*got)[i], want, 1e-5 * (1.0 + std::fabs(want))) << i;
    }
}

TEST(GraphAllocator, OutputsAreNeitherReusedNorFreed) {
    auto c = make_chain(1000);
    c->y1->set_output();
    auto g = Graph::build({c->y3});
    ASSERT_TRUE(g.is_ok());
    GraphAllocator galloc(cpu_buft());
    ASSERT_TRUE(galloc.alloc_graph(*g).is_ok());
    EXPECT_NE(c->y2->data, c->y1->data);
    EXPECT_TRUE(check_graph_allocation(*g).is_ok());
}

TEST(GraphAllocator, DeadMemoryIsReusedByLaterNodes) {
    Context ctx;
    Tensor* x = ctx.new_tensor(DType::F32, {256});
    x->set_input();
    Tensor* a = sum_rows(ctx, relu(ctx, x));     // relu result dies at sum_rows
    Tensor* b = cont(ctx, repeat(ctx, a, x));    // cont is not in-place: gets relu's old block
    b->set_output();
    auto g = Graph::build({b});
    ASSERT_TRUE(g.is_ok());
    GraphAllocator galloc(cpu_buft());
    ASSERT_TRUE(galloc.alloc_graph(*g).is_ok());
    EXPECT_TRUE(check_graph_allocation(*g).is_ok());
    auto stats = measure_allocation(*g, std::vector<const Buffer*>{galloc.buffer(0)});
    ASSERT_TRUE(stats.is_ok());
    EXPECT_LT(galloc.buffer_size(0), stats->placed_bytes) << "some memory was reused";
    EXPECT_GE(galloc.buffer_size(0), stats->lower_bound_bytes);
}

TEST(GraphAllocator, ComputingTwiceGivesBitIdenticalOutputs) {
    auto c = make_chain(777);
    auto g = Graph::build({c->y3});
    ASSERT_TRUE(g.is_ok());
    GraphAllocator galloc(cpu_buft());
    ASSERT_TRUE(galloc.alloc_graph(*g).is_ok());
    std::vector<float> xv(777);
    for (size_t i = 0; i < xv.size(); ++i) xv[i] = 0.01f * static_cast<float>(i) - 3.0f;
    ASSERT_TRUE(tensor_set_f32(*c->x, xv).is_ok());
    auto cpu = global_registry().init_by_name("CPU");
    ASSERT_TRUE(cpu.is_ok());
    ASSERT_TRUE((*cpu)->graph_compute(*g).is_ok());
    auto first = tensor_get_f32(*c->y3);
    ASSERT_TRUE(galloc.alloc_graph(*g).is_ok());
    EXPECT_FALSE(galloc.last_alloc_replanned());
    ASSERT_TRUE((*cpu)->graph_compute(*g).is_ok());
    auto second = tensor_get_f32(*c->y3);
    ASSERT_TRUE(first.is_ok() && second.is_ok());
    EXPECT_EQ(*first, *second);
}

TEST(GraphAllocator, ReplansWhenTheGraphGrowsOrChangesShape) {
    GraphAllocator galloc(cpu_buft());
    auto small = make_chain(100);
    auto g1 = Graph::build({small->y3});
    ASSERT_TRUE(galloc.alloc_graph(*g1).is_ok());
    const size_t small_size = galloc.buffer_size(0);

    auto same = make_chain(100);  // rebuilt the same way: the plan still fits
    auto g2 = Graph::build({same->y3});
    ASSERT_TRUE(galloc.alloc_graph(*g2).is_ok());
    EXPECT_FALSE(galloc.last_alloc_replanned());

    auto big = make_chain(5000);  // same topology, larger tensors
    auto g3 = Graph::build({big->y3});
    ASSERT_TRUE(galloc.alloc_graph(*g3).is_ok());
    EXPECT_TRUE(galloc.last_alloc_replanned());
    EXPECT_GT(galloc.buffer_size(0), small_size);
    EXPECT_TRUE(check_graph_allocation(*g3).is_ok());

    auto back = make_chain(100);  // smaller again: fits, no new plan, the buffer is kept
    auto g4 = Graph::build({back->y3});
    ASSERT_TRUE(galloc.alloc_graph(*g4).is_ok());
    EXPECT_FALSE(galloc.last_alloc_replanned());
}

// A graph's tensors keep the addresses of the last allocation. When a bigger graph that contains
// them makes the allocator replace its buffer, they must be placed again, not taken for
// preallocated tensors pointing at the freed buffer (found by the copy-failure sweep: the
// scheduler's recovery re-planned and a view then read its source's freed buffer).
//
// Its buffers come from a type that never hands out a buffer object at the address of the one
// freed just before (malloc would give it back, and a stale tensor would then look like ours).
class FreshAddressBufferType final : public BufferType {
public:
    const char* name() const override { return "fresh"; }
    Result<std::unique_ptr<Buffer>> alloc_buffer(size_t size) override {
        auto spacer = cpu_buft().alloc_buffer(1);  // takes the freed buffer object's memory
        if (spacer.is_ok()) spacers_.push_back(std::move(spacer).value());
        return cpu_buft().alloc_buffer(size);
    }
    size_t alignment() const override { return cpu_buft().alignment(); }
    bool is_host() const override { return true; }
    Device& device() const override { return cpu_buft().device(); }

private:
    std::vector<std::unique_ptr<Buffer>> spacers_;
};

TEST(GraphAllocator, TensorsOfAReplacedBufferArePlacedAgain) {
    FreshAddressBufferType buft;
    GraphAllocator galloc(buft);
    auto small = make_chain(100);
    auto g1 = Graph::build({small->y3});
    ASSERT_TRUE(galloc.alloc_graph(*g1).is_ok());
    const Buffer* first_buffer = galloc.buffer(0);

    auto big = make_chain(100000);
    auto g2 = Graph::build({small->y3, big->y3});
    ASSERT_TRUE(galloc.alloc_graph(*g2).is_ok());
    ASSERT_TRUE(galloc.last_alloc_replanned());
    ASSERT_NE(galloc.buffer(0), first_buffer) << "the test needs the buffer replaced";
    for (const Tensor* t : {small->x, small->y1, small->y2, small->y3, big->x, big->y3}) {
        EXPECT_TRUE(galloc.owns(*t)) << "a tensor still points at the replaced buffer";
    }
    EXPECT_TRUE(check_graph_allocation(*g2).is_ok());
}

// A tensor the allocator placed once and the user then put in a buffer of their own is theirs.
TEST(GraphAllocator, ATensorMovedToAUserBufferIsLeftThere) {
    auto c = make_chain(64);
    auto g = Graph::build({c->y3});
    GraphAllocator galloc(cpu_buft());
    ASSERT_TRUE(galloc.alloc_graph(*g).is_ok());
    auto own = cpu_buft().alloc_buffer(1024);
    ASSERT_TRUE(own.is_ok());
    c->x->buffer = nullptr;
    c->x->data = nullptr;
    ASSERT_TRUE(tensor_alloc(**own, *c->x, (*own)->base()).is_ok());
    ASSERT_TRUE(galloc.alloc_graph(*g).is_ok());
    EXPECT_EQ(c->x->buffer, own->get());
    EXPECT_EQ(c->x->data, (*own)->base());
}

// set_rows writes into a view of a KV cache that lives in a weight buffer, outside the graph: the
// plan must still be reused (found through the all-ops config on [SIM0, CPU], where it was not and
// the scheduler failed with two buffer types).
TEST(GraphAllocator, ViewOfATensorOutsideTheGraphKeepsThePlan) {
    Context weights;
    Tensor* cache = weights.new_tensor(DType::F32, {8, 16});
    auto held = alloc_ctx_tensors(weights, cpu_buft());
    ASSERT_TRUE(held.is_ok());
    Context ctx;
    Tensor* rows = ctx.new_tensor(DType::F32, {8, 3});
    Tensor* slots = ctx.new_tensor(DType::I64, {3});
    rows->set_input();
    slots->set_input();
    Tensor* stored = set_rows(ctx, cache, scale(ctx, rows, 2.0f), slots);
    auto g = Graph::build({stored});
    ASSERT_TRUE(g.is_ok()) << g.status().to_string();
    GraphAllocator galloc(cpu_buft());
    ASSERT_TRUE(galloc.alloc_graph(*g).is_ok());
    ASSERT_TRUE(galloc.alloc_graph(*g).is_ok());
    EXPECT_FALSE(galloc.last_alloc_replanned());
    EXPECT_EQ(stored->data, cache->data);
}

TEST(GraphAllocator, ReplansWhenTheTopologyChangesWithTheSameNodeCount) {
    GraphAllocator galloc(cpu_buft());
    Context ctx;
    Tensor* x = ctx.new_tensor(DType::F32, {64});
    x->set_input();
    Tensor* a = relu(ctx, x);
    Tensor* b = silu(ctx, a);
    Tensor* y = add(ctx, a, b);  // a lives until add
    y->set_output();
    auto g1 = Graph::build({y});
    ASSERT_TRUE(galloc.alloc_graph(*g1).is_ok());

    Context ctx2;
    Tensor* x2 = ctx2.new_tensor(DType::F32, {64});
    x2->set_input();
    Tensor* a2 = relu(ctx2, x2);
    Tensor* b2 = silu(ctx2, a2);
    Tensor* y2 = add(ctx2, b2, x2);  // same counts, different sources
    y2->set_output();
    auto g2 = Graph::build({y2});
    ASSERT_EQ(g2->n_nodes(), g1->n_nodes());
    ASSERT_TRUE(galloc.alloc_graph(*g2).is_ok());
    EXPECT_TRUE(galloc.last_alloc_replanned());
    EXPECT_TRUE(check_graph_allocation(*g2).is_ok());
}

TEST(GraphAllocator, SeveralBufferTypes) {
    TestBufferType other("OTHER");
    GraphAllocator galloc({&cpu_buft(), &other});
    auto c = make_chain(300);
    auto g = Graph::build({c->y3});
    ASSERT_TRUE(g.is_ok());
    const std::vector<int> node_ids = {0, 1, 1};  // relu on buffer 0, silu and scale on buffer 1
    const std::vector<int> leaf_ids = {0};
    ASSERT_TRUE(galloc.reserve(*g, node_ids, leaf_ids).is_ok());
    ASSERT_TRUE(galloc.alloc_graph(*g).is_ok());
    EXPECT_EQ(c->y1->buffer, galloc.buffer(0));
    EXPECT_EQ(c->y3->buffer, galloc.buffer(1));
    EXPECT_NE(c->y2->data, c->y1->data) << "no in-place reuse across buffers";
    EXPECT_TRUE(check_graph_allocation(*g).is_ok());

    // A changed graph cannot be re-planned without its buffer assignment.
    auto bigger = make_chain(600);
    auto g2 = Graph::build({bigger->y3});
    Status s = galloc.alloc_graph(*g2);
    EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
    EXPECT_NE(s.message().find("reserve"), std::string::npos);

    EXPECT_EQ(galloc.reserve(*g, std::vector<int>{0, 1}).code(), StatusCode::InvalidArgument) << "wrong id count";
    EXPECT_EQ(galloc.reserve(*g, std::vector<int>{0, 2, 1}).code(), StatusCode::InvalidArgument) << "id out of range";
}

TEST(GraphAllocator, SameBufferTypeTwiceSharesOneBuffer) {
    GraphAllocator galloc({&cpu_buft(), &cpu_buft()});
    auto c = make_chain(300);
    auto g = Graph::build({c->y3});
    ASSERT_TRUE(galloc.reserve(*g, std::vector<int>{0, 1, 0}).is_ok());
    EXPECT_EQ(galloc.buffer(0), galloc.buffer(1));
    EXPECT_GT(galloc.buffer_size(0), 0u);
    EXPECT_EQ(galloc.buffer_size(1), 0u) << "counted once";
}

TEST(GraphAllocator, AllocationFailureIsAStatus) {
    TestBufferType refusing("REFUSE", true);
    GraphAllocator galloc(refusing);
    auto c = make_chain(100);
    auto g = Graph::build({c->y3});
    Status s = galloc.alloc_graph(*g);
    EXPECT_EQ(s.code(), StatusCode::OutOfMemory);
    EXPECT_NE(s.message().find("REFUSE"), std::string::npos);
    EXPECT_EQ(c->y3->data, nullptr);
}

TEST(GraphAllocator, PreallocatedTensorsAreLeftAlone) {
    Context weights;
    Tensor* w = weights.new_tensor(DType::F32, {16, 16});
    auto wbuf = alloc_ctx_tensors(weights, cpu_buft());
    ASSERT_TRUE(wbuf.is_ok());
    void* w_data = w->data;
    Context ctx;
    Tensor* x = ctx.new_tensor(DType::F32, {16, 4});
    x->set_input();
    Tensor* y = relu(ctx, mul_mat(ctx, w, x));
    y->set_output();
    auto g = Graph::build({y});
    GraphAllocator galloc(cpu_buft());
    ASSERT_TRUE(galloc.alloc_graph(*g).is_ok());
    EXPECT_EQ(w->data, w_data);
    ASSERT_EQ((*wbuf)->parts().size(), 1u);
    EXPECT_EQ(w->buffer, (*wbuf)->parts().front().get());
    EXPECT_TRUE(check_graph_allocation(*g).is_ok());
}

// The checker itself must catch overlapping live tensors and misplaced ones.
TEST(AllocationChecker, DetectsOverlapAndMisalignment) {
    Context ctx;
    Tensor* x = ctx.new_tensor(DType::F32, {64});
    x->set_input();
    Tensor* a = relu(ctx, x);
    Tensor* b = mul_mat(ctx, ctx.new_tensor(DType::F32, {64, 64}), a);  // not in place
    Tensor* y = add(ctx, a, b);  // a is still live while b is computed
    y->set_output();
    auto g = Graph::build({y});
    auto buf = cpu_buft().alloc_buffer(1 << 17);
    ASSERT_TRUE(buf.is_ok());
    auto* base = static_cast<std::byte*>((*buf)->base());
    size_t next = 0;
    for (Tensor* t : {x, a, b, y, b->src[0]}) {
        ASSERT_TRUE(tensor_alloc(**buf, *t, base + next).is_ok());
        next += 16384;
    }
    Status valid = check_graph_allocation(*g);
    EXPECT_TRUE(valid.is_ok()) << valid.to_string();
    b->data = a->data;  // b written while a is still needed
    Status s = check_graph_allocation(*g);
    EXPECT_EQ(s.code(), StatusCode::Internal);
    EXPECT_NE(s.message().find("share bytes"), std::string::npos);
    b->data = base + 3 * 16384 + 4;  // misaligned (and overlapping y)
    EXPECT_EQ(check_graph_allocation(*g).code(), StatusCode::Internal);
}

}  // namespace
}  // namespace xb
