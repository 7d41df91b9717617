// The DOT writer on a graph split over SIM0 and the CPU: every id it uses is declared (the
// scheduler's copies included), cross-backend copies are bold, names are escaped, ids do not
// depend on addresses, and Graphviz renders a cluster per split and every edge.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "alloc/context_alloc.hpp"
#include "backend/tensor_io.hpp"
#include "builtin/builtin_backends.hpp"
#include "core/ops.hpp"
#include "fuzz_targets.hpp"
#include "sched/sched_dot.hpp"

namespace xb {
namespace {

std::unique_ptr<Backend> init(const char* name) {
    auto b = global_registry().init_by_name(name, {});
    return b.is_ok() ? std::move(b).value() : nullptr;
}

// x (input) * w (a weight on SIM0) -> tanh pinned to the CPU -> scale, the output.
struct SplitGraph {
    std::unique_ptr<Backend> sim = init("SIM0");
    std::unique_ptr<Backend> cpu = init("CPU");
    Context ctx;
    std::unique_ptr<MultiBuffer> weights;
    Tensor* pinned = nullptr;
    Graph graph;

    explicit SplitGraph(const std::string& product_name) {
        Tensor* x = ctx.new_tensor(DType::F32, {17, 3});
        x->name = "x";
        x->set_input();
        Tensor* w = ctx.new_tensor(DType::F32, {17, 3});
        w->name = "w";
        const std::vector<Tensor*> placed = {w};
        weights = std::move(alloc_tensors(placed, sim->default_buffer_type())).value();
        weights->set_usage(BufferUsage::Weights);
        EXPECT_TRUE(tensor_set_f32(*w, std::vector<float>(51, 0.5f)).is_ok());
        Tensor* product = mul(ctx, x, w);
        product->name = product_name;
        pinned = tanh(ctx, product);
        pinned->name = "pinned";
        Tensor* out = scale(ctx, pinned, 0.5f, 0.0f);
        out->name = "out";
        out->set_output();
        graph = Graph::build({out}).value();
    }

    std::string dot(DotLevel level = DotLevel::Node) {
        auto sched = Scheduler::create({sim.get(), cpu.get()});
        EXPECT_TRUE(sched.is_ok());
        EXPECT_TRUE((*sched)->set_tensor_backend(*pinned, *cpu).is_ok());
        EXPECT_TRUE((*sched)->alloc_graph(graph).is_ok());
        n_splits = (*sched)->n_splits();
        std::ostringstream out;
        write_dot(graph, **sched, out, level);
        return out.str();
    }
    int n_splits = 0;
};

TEST(SchedDot, DeclaresTheSchedulersCopiesAndDrawsCrossBackendEdgesBold) {
    SplitGraph g("product");
    ASSERT_NE(g.sim, nullptr);
    const std::string dot = g.dot();
    EXPECT_EQ(fuzz::dot_problem(dot), "") << dot;
    // The input x is copied to SIM0 for the product, and the product (on SIM0) to the CPU for the
    // pinned node: dashed copy boxes, bold edges into them, and the nodes reading the copies.
    EXPECT_NE(dot.find("c0 [label=\"SIM0#x#0\", style=\"filled,dashed\""), std::string::npos) << dot;
    EXPECT_NE(dot.find("l0 -> c0 [penwidth=3"), std::string::npos) << dot;
    EXPECT_NE(dot.find("c0 -> n0;"), std::string::npos) << dot;
    EXPECT_NE(dot.find("c1 [label=\"CPU#product#0\", style=\"filled,dashed\""), std::string::npos) << dot;
    EXPECT_NE(dot.find("n0 -> c1 [penwidth=3"), std::string::npos) << dot;
    EXPECT_NE(dot.find("c1 -> n1;"), std::string::npos) << dot;
    EXPECT_EQ(dot.find("0x"), std::string::npos) << "ids must not be addresses:\n" << dot;
    EXPECT_NE(dot.find("legend1 [label=\"CPU\""), std::string::npos);
}

// Graphviz itself reads the text: the legend and one cluster per split, and every edge drawn.
TEST(SchedDot, GraphvizRendersOneClusterPerSplitAndEveryEdge) {
    if (std::system("dot -V > /dev/null 2>&1") != 0) GTEST_SKIP() << "Graphviz is not installed (scripts/setup installs it)";
    SplitGraph g("product");
    ASSERT_NE(g.sim, nullptr);
    const std::string dot = g.dot();
    ASSERT_GE(g.n_splits, 2);
    const std::string in = testing::TempDir() + "/sched.dot";
    const std::string out = testing::TempDir() + "/sched.svg";
    std::ofstream(in) << dot;
    ASSERT_EQ(std::system(("dot -Tsvg " + in + " -o " + out).c_str()), 0) << dot;
    std::stringstream svg;
    svg << std::ifstream(out).rdbuf();
    auto count = [](const std::string& text, const std::string& what) {
        size_t n = 0;
        for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
        return n;
    };
    EXPECT_EQ(count(svg.str(), "class=\"cluster\""), static_cast<size_t>(g.n_splits) + 1) << "the legend and each split";
    EXPECT_EQ(count(svg.str(), "class=\"edge\""), count(dot, " -> "));
    EXPECT_NE(svg.str().find("split 0: SIM0"), std::string::npos);
    EXPECT_NE(svg.str().find("split 1: CPU"), std::string::npos);
}

// The split level: a box per split with its backend and node count, one edge per pair of splits a
// tensor crosses, labelled with its bytes, bold into another backend.
TEST(SchedDot, SplitLevelDrawsABoxPerSplitAndTheBytesCrossing) {
    SplitGraph g("product");
    ASSERT_NE(g.sim, nullptr);
    const std::string dot = g.dot(DotLevel::Split);
    EXPECT_EQ(fuzz::dot_problem(dot), "") << dot;
    ASSERT_GE(g.n_splits, 2);
    EXPECT_NE(dot.find("g0 [label=\"split 0: SIM0\\n1 node\\n1 weight, 204 B\""), std::string::npos) << dot;
    EXPECT_NE(dot.find("g1 [label=\"split 1: CPU\\n"), std::string::npos) << dot;
    EXPECT_NE(dot.find("g0 -> g1 [label=\"204 B\", penwidth=3"), std::string::npos) << "17 x 3 floats cross" << dot;
    EXPECT_EQ(dot.find("n0"), std::string::npos) << "no node boxes at the split level";
}

// The layer level groups nodes named as llama.cpp names them (name-<layer>) within each split.
TEST(SchedDot, LayerLevelGroupsNodesByTheirLayer) {
    auto cpu = init("CPU");
    Context ctx;
    Tensor* x = ctx.new_tensor(DType::F32, {8, 2});
    x->set_input();
    Tensor* h = x;
    for (int layer = 0; layer < 3; ++layer) {
        Tensor* a = scale(ctx, h, 2.0f, 0.0f);
        a->name = "norm-" + std::to_string(layer);
        h = add(ctx, a, h);
        h->name = "out-" + std::to_string(layer);
    }
    Tensor* result = tanh(ctx, h);
    result->name = "result_output";
    result->set_output();
    Graph graph = Graph::build({result}).value();
    auto sched = Scheduler::create({cpu.get()});
    ASSERT_TRUE(sched.is_ok());
    ASSERT_TRUE((*sched)->alloc_graph(graph).is_ok());
    std::ostringstream out;
    write_dot(graph, **sched, out, DotLevel::Layer);
    const std::string dot = out.str();
    EXPECT_EQ(fuzz::dot_problem(dot), "") << dot;
    for (int layer = 0; layer < 3; ++layer) {
        EXPECT_NE(dot.find("g" + std::to_string(layer) + " [label=\"layer " + std::to_string(layer) + "\\n2 nodes\""),
                  std::string::npos)
            << dot;
    }
    EXPECT_NE(dot.find("g3 [label=\"outside the layers\\n1 node\""), std::string::npos) << dot;
    EXPECT_NE(dot.find("g0 -> g1 [label=\"64 B\"]"), std::string::npos) << dot;
    EXPECT_NE(dot.find("subgraph cluster_split0"), std::string::npos) << dot;
    EXPECT_EQ(dot_level_from_name("layer"), DotLevel::Layer);
    EXPECT_EQ(dot_level_from_name("nodes"), std::nullopt);
}

TEST(SchedDot, IdsAreTheSameForTheSameGraphBuiltTwice) {
    SplitGraph a("product");
    SplitGraph b("product");
    EXPECT_EQ(a.dot(), b.dot());
}

TEST(SchedDot, EscapesNames) {
    SplitGraph g("say \"hi\" \\ to\nme\x01");
    const std::string dot = g.dot();
    EXPECT_EQ(fuzz::dot_problem(dot), "") << dot;
    EXPECT_NE(dot.find(R"(label="say \"hi\" \\ to\nme \nmul)"), std::string::npos) << dot;
    EXPECT_EQ(dot_quoted("a\"b\\c\nd\te"), R"("a\"b\\c\nd e")");
}

TEST(SchedDot, TheCheckerFindsBrokenText) {
    EXPECT_NE(fuzz::dot_problem("digraph x {\n  n0 [label=\"a];\n}\n"), "");
    EXPECT_NE(fuzz::dot_problem("digraph x {\n  n0 [label=\"a\\\"];\n}\n"), "");
    EXPECT_EQ(fuzz::dot_problem("digraph x {\n  n0 [label=\"a\\\\\"];\n}\n"), "");
    EXPECT_NE(fuzz::dot_problem("digraph x {\n  n0 [label=\"a\"];\n  n0 -> n1;\n}\n").find("n1"), std::string::npos);
    EXPECT_EQ(fuzz::dot_problem("digraph x {\n  n0 [label=\"a\"];\n  n1 [label=\"b\"];\n  n0 -> n1 [penwidth=3];\n}\n"), "");
}

}  // namespace
}  // namespace xb
