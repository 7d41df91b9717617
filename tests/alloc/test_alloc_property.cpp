// Property tests of the graph allocator on seeded random graphs: the allocation checker passes,
// and computing with reused memory gives bit-identical results to computing with every tensor in
// its own memory.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "alloc/allocation_checker.hpp"
#include "alloc/context_alloc.hpp"
#include "alloc/graph_allocator.hpp"
#include "backend/registry.hpp"
#include "builtin/builtin_backends.hpp"
#include "backend/tensor_io.hpp"
#include "core/ops.hpp"

namespace xb {
namespace {

BufferType& cpu_buft() { return global_registry().dev_by_name("CPU")->buffer_type(); }

// A second host buffer type with its own identity, so graphs can span two buffer types.
class OtherHostBufferType final : public BufferType {
public:
    const char* name() const override { return "CPU_other"; }
    Result<std::unique_ptr<Buffer>> alloc_buffer(size_t size) override { return cpu_buft().alloc_buffer(size); }
    size_t alignment() const override { return 64; }  // its buffers are CPU buffers
    bool is_host() const override { return true; }
    Device& device() const override { return cpu_buft().device(); }
};

// A random DAG over tensors of shape [n0, n1]: element-wise, reductions with broadcast back,
// mul_mat with square weights, views (reshape, transpose of squares, 1-d views) and copies.
struct RandomGraph {
    Context weights_ctx;
    Context ctx;
    std::vector<Tensor*> weights;
    std::vector<Tensor*> inputs;
    std::vector<Tensor*> outputs;
};

class RandomGraphBuilder {
public:
    explicit RandomGraphBuilder(uint32_t seed) : rng_(seed) {}

    std::unique_ptr<RandomGraph> build() {
        auto g = std::make_unique<RandomGraph>();
        n0_ = pick(1, 9);
        n1_ = pick(1, 7);
        for (int i = 0, n = pick(1, 3); i < n; ++i) {
            Tensor* in = g->ctx.new_tensor(DType::F32, {n0_, n1_});
            in->set_input();
            g->inputs.push_back(in);
            pool_.push_back(in);
        }
        for (int i = 0, n = pick(1, 2); i < n; ++i) g->weights.push_back(g->weights_ctx.new_tensor(DType::F32, {n0_, n0_}));
        const int n_ops = pick(3, 24);
        for (int i = 0; i < n_ops; ++i) {
            Tensor* t = random_op(*g);
            if (pick(0, 9) == 0) t->set_output();
            pool_.push_back(t);
        }
        pool_.back()->set_output();
        for (Tensor* t : pool_) {
            if (t->is_output()) g->outputs.push_back(t);
        }
        return g;
    }

private:
    int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
    // Recent tensors are likelier sources, so chains and long-lived tensors both occur.
    Tensor* src() {
        const int n = static_cast<int>(pool_.size());
        const int back = std::min(n - 1, std::geometric_distribution<int>(0.35)(rng_));
        return pool_[static_cast<size_t>(n - 1 - back)];
    }

    Tensor* random_op(RandomGraph& g) {
        Context& c = g.ctx;
        switch (pick(0, 11)) {
            case 0: return add(c, src(), src());
            case 1: return mul(c, src(), src());
            case 2: return sub(c, src(), sum_rows(c, src()));  // broadcast of a reduction
            case 3: return silu(c, src());
            case 4: return scale(c, src(), 0.5f, 0.25f);
            case 5: return rms_norm(c, src(), 1e-5f);
            case 6: return soft_max(c, src());
            case 7: return mul_mat(c, g.weights[static_cast<size_t>(pick(0, static_cast<int>(g.weights.size()) - 1))], src());
            case 8: return reshape(c, relu(c, view_1d(c, cont(c, src()), n0_ * n1_, 0)), {n0_, n1_, 1, 1});
            case 9: return n0_ == n1_ ? cont(c, transpose(c, src())) : dup(c, src());
            case 10: return tanh(c, src());
            default: return div(c, src(), add1(c, sqr(c, src()), ones(c)));  // never divides by zero
        }
    }

    Tensor* ones(Context& c) {
        if (one_ == nullptr) {
            one_ = c.new_tensor(DType::F32, {1});
            one_->set_input();
        }
        return one_;
    }

    std::mt19937 rng_;
    int64_t n0_ = 1, n1_ = 1;
    std::vector<Tensor*> pool_;
    Tensor* one_ = nullptr;
};

// Draws values for t (always, so both builds consume the generator alike) and sets them when t is
// allocated: an input no node uses gets no memory from the graph allocator.
void fill(Tensor& t, std::mt19937& rng) {
    std::uniform_real_distribution<float> dist(0.5f, 1.5f);  // positive: keeps div and norms tame
    std::vector<float> v(static_cast<size_t>(t.nelements()));
    for (float& x : v) x = dist(rng);
    if (t.data == nullptr) return;
    ASSERT_TRUE(tensor_set_f32(t, v).is_ok());
}

// Sets weights and inputs of `g` from `seed`, computes, and returns every output's bytes.
std::vector<std::vector<float>> run(RandomGraph& g, const Graph& graph, Backend& cpu, uint32_t seed) {
    std::mt19937 rng(seed);
    for (Tensor* w : g.weights) fill(*w, rng);
    for (Tensor& t : g.ctx.tensors()) {
        if (t.is_input()) fill(t, rng);
    }
    EXPECT_TRUE(cpu.graph_compute(graph).is_ok());
    std::vector<std::vector<float>> out;
    for (Tensor* t : g.outputs) out.push_back(tensor_get_f32(*t).value());
    return out;
}

class AllocProperty : public ::testing::TestWithParam<int> {};

TEST_P(AllocProperty, RandomGraphsAreSafeAndBitIdentical) {
    auto cpu = global_registry().init_by_name("CPU", "threads=1");
    ASSERT_TRUE(cpu.is_ok());
    OtherHostBufferType other;
    const int first_seed = GetParam() * 250;
    for (int seed = first_seed; seed < first_seed + 250; ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        // With reuse: weights preallocated, everything else by the graph allocator.
        auto reused = RandomGraphBuilder(static_cast<uint32_t>(seed)).build();
        auto reused_graph = Graph::build(reused->outputs);
        ASSERT_TRUE(reused_graph.is_ok()) << reused_graph.status().to_string();
        auto wbuf = alloc_ctx_tensors(reused->weights_ctx, cpu_buft());
        ASSERT_TRUE(wbuf.is_ok());
        const bool two_types = seed % 3 == 0;
        GraphAllocator galloc(two_types ? std::vector<BufferType*>{&cpu_buft(), &other}
                                        : std::vector<BufferType*>{&cpu_buft()});
        if (two_types) {
            std::mt19937 ids_rng(static_cast<uint32_t>(seed));
            std::vector<int> node_ids(static_cast<size_t>(reused_graph->n_nodes()));
            for (int& id : node_ids) id = static_cast<int>(ids_rng() % 2);
            ASSERT_TRUE(galloc.reserve(*reused_graph, node_ids).is_ok());
        }
        ASSERT_TRUE(galloc.alloc_graph(*reused_graph).is_ok());
        const Status check = check_graph_allocation(*reused_graph);
        ASSERT_TRUE(check.is_ok()) << check.to_string() << "\n" << reused_graph->to_string();

        // Without reuse: every tensor in its own memory.
        auto naive = RandomGraphBuilder(static_cast<uint32_t>(seed)).build();
        auto naive_graph = Graph::build(naive->outputs);
        auto nbuf = alloc_ctx_tensors(naive->ctx, cpu_buft());
        auto nwbuf = alloc_ctx_tensors(naive->weights_ctx, cpu_buft());
        ASSERT_TRUE(nbuf.is_ok() && nwbuf.is_ok());

        const auto got = run(*reused, *reused_graph, **cpu, static_cast<uint32_t>(seed));
        const auto want = run(*naive, *naive_graph, **cpu, static_cast<uint32_t>(seed));
        ASSERT_EQ(got, want) << reused_graph->to_string();
        // A second compute without setting the inputs again: inputs were not overwritten.
        ASSERT_TRUE((*cpu)->graph_compute(*reused_graph).is_ok());
        for (size_t i = 0; i < reused->outputs.size(); ++i) ASSERT_EQ(tensor_get_f32(*reused->outputs[i]).value(), want[i]);
    }
}

// 8 x 250 = 2000 seeded graphs, in shards so ctest can run them in parallel.
INSTANTIATE_TEST_SUITE_P(Seeds, AllocProperty, ::testing::Range(0, 8));

}  // namespace
}  // namespace xb
