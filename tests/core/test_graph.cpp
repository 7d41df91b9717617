// Tensors, contexts and graphs: shapes, strides, views, topological order, sticky builder errors.
#include <gtest/gtest.h>

#include "core/context.hpp"
#include "core/graph.hpp"
#include "core/ops.hpp"

namespace xb {
namespace {

TEST(Tensor, ContiguousStridesAndBytes) {
    Context ctx;
    Tensor* t = ctx.new_tensor(DType::F16, {5, 3, 2});
    EXPECT_EQ(t->nb[0], 2u);
    EXPECT_EQ(t->nb[1], 10u);
    EXPECT_EQ(t->nb[2], 30u);
    EXPECT_EQ(t->nb[3], 60u);
    EXPECT_EQ(t->nbytes(), 60u);
    EXPECT_EQ(t->nelements(), 30);
    EXPECT_EQ(t->nrows(), 6);
    EXPECT_EQ(t->n_dims(), 3);
    EXPECT_TRUE(t->is_contiguous());
}

TEST(Tensor, PermuteAndTransposeShareStorage) {
    Context ctx;
    Tensor* a = ctx.new_tensor(DType::F32, {4, 3, 2});
    Tensor* p = permute(ctx, a, {2, 0, 1, 3});  // dim0 -> 2, dim1 -> 0, dim2 -> 1
    ASSERT_TRUE(ctx.ok()) << ctx.status().to_string();
    EXPECT_EQ(p->ne[0], 3);
    EXPECT_EQ(p->ne[1], 2);
    EXPECT_EQ(p->ne[2], 4);
    EXPECT_EQ(p->nb[2], a->nb[0]);
    EXPECT_EQ(p->view_src, a);
    EXPECT_FALSE(p->is_contiguous());
    EXPECT_TRUE(p->is_permuted());
    EXPECT_EQ(p->nbytes(), a->nbytes());

    Tensor* t = transpose(ctx, a);
    EXPECT_EQ(t->ne[0], 3);
    EXPECT_EQ(t->ne[1], 4);
    EXPECT_TRUE(t->is_transposed());
    // A view of a view points at the storage root with the offsets added.
    Tensor* v = view_1d(ctx, view_1d(ctx, a, 8, 16), 2, 8);
    ASSERT_TRUE(ctx.ok());
    EXPECT_EQ(v->view_src, a);
    EXPECT_EQ(v->view_offs, 24u);
}

TEST(Tensor, ContextWithDataGivesViewsTheirSourceData) {
    Context ctx(ContextParams{.alloc_data = true});
    Tensor* a = ctx.new_tensor(DType::F32, {8, 2});
    ASSERT_NE(a->data, nullptr);
    Tensor* row1 = view_1d(ctx, a, 8, a->nb[1]);
    EXPECT_EQ(row1->data, static_cast<std::byte*>(a->data) + a->nb[1]);
}

TEST(Graph, TopologicalOrderAndLeafs) {
    Context ctx;
    Tensor* x = ctx.new_tensor(DType::F32, {4});
    Tensor* w = ctx.new_tensor(DType::F32, {4, 4});
    Tensor* h = mul_mat(ctx, w, x);
    Tensor* y = add(ctx, silu(ctx, h), h);  // h is used twice, appears once
    auto g = Graph::build({y});
    ASSERT_TRUE(g.is_ok()) << g.status().to_string();
    EXPECT_EQ(g->n_leafs(), 2);
    ASSERT_EQ(g->n_nodes(), 3);
    EXPECT_EQ(g->node(0), h);
    EXPECT_EQ(g->node(-1), y);
    // Every source of a node comes before it.
    for (int i = 0; i < g->n_nodes(); ++i) {
        for (Tensor* s : g->node(i)->src) {
            if (s == nullptr || s->op == Op::None) continue;
            bool earlier = false;
            for (int j = 0; j < i; ++j) earlier |= g->node(j) == s;
            EXPECT_TRUE(earlier);
        }
    }
    Graph part = g->view(1, 3);
    EXPECT_EQ(part.n_nodes(), 2);
    EXPECT_EQ(part.n_leafs(), 0);
    EXPECT_NE(g->to_string().find("mul_mat"), std::string::npos);
}

TEST(Graph, GrowsWithoutCapAndDeepChainsDoNotOverflow) {
    Context ctx;
    Tensor* t = ctx.new_tensor(DType::F32, {3});
    for (int i = 0; i < 50000; ++i) t = scale(ctx, t, 1.0f);
    auto g = Graph::build({t});
    ASSERT_TRUE(g.is_ok());
    EXPECT_EQ(g->n_nodes(), 50000);
}

TEST(Graph, ExpandAddsOnlyNewNodes) {
    Context ctx;
    Tensor* a = ctx.new_tensor(DType::F32, {3});
    Tensor* b = sqr(ctx, a);
    Tensor* c = sqrt(ctx, b);
    Graph g;
    ASSERT_TRUE(g.expand(b).is_ok());
    ASSERT_TRUE(g.expand(c).is_ok());
    EXPECT_EQ(g.n_nodes(), 2);
    EXPECT_TRUE(g.contains(a));
}

// The source refs a built graph records equal ref_of for every source of every node, through
// expand as well; a node added by hand drops them. view_into and repeated copy the nodes.
TEST(Graph, SourceRefsMatchLookupsUntilTheGraphIsRewritten) {
    Context ctx;
    Tensor* x = ctx.new_tensor(DType::F32, {4, 2});
    Tensor* w = ctx.new_tensor(DType::F32, {4, 4});
    Tensor* h = mul_mat(ctx, w, x);
    Tensor* y = add(ctx, silu(ctx, h), h);
    Graph g;
    ASSERT_TRUE(g.expand(h).is_ok());
    ASSERT_TRUE(g.expand(y).is_ok());
    ASSERT_TRUE(g.has_src_refs());
    for (int i = 0; i < g.n_nodes(); ++i) {
        for (int j = 0; j < kMaxSrc; ++j) {
            EXPECT_EQ(g.src_refs(i)[static_cast<size_t>(j)], g.ref_of(g.node(i)->src[j])) << "node " << i << " source " << j;
        }
    }
    EXPECT_TRUE(g.src_refs(0)[0].is_leaf());
    EXPECT_TRUE(g.src_refs(g.n_nodes() - 1)[1].is_node());
    EXPECT_EQ(g.src_refs(0)[2].kind(), GraphRef::Kind::Absent);

    Graph part;
    g.view_into(1, 3, part);
    ASSERT_EQ(part.n_nodes(), 2);
    EXPECT_EQ(part.node(0), g.node(1));
    EXPECT_FALSE(part.has_src_refs());
    const Graph thrice = g.repeated(3);
    ASSERT_EQ(thrice.n_nodes(), 3 * g.n_nodes());
    for (int i = 0; i < thrice.n_nodes(); ++i) EXPECT_EQ(thrice.node(i), g.node(i % g.n_nodes()));

    g.add_node(relu(ctx, y));
    EXPECT_FALSE(g.has_src_refs());
    g.add_node(y);  // already there: not added twice
    EXPECT_EQ(g.n_nodes(), 4);
}

TEST(BuilderErrors, StickyErrorNamesTheOpAndFailsTheGraph) {
    Context ctx;
    Tensor* a = ctx.new_tensor(DType::F32, {3, 4});
    Tensor* b = ctx.new_tensor(DType::F32, {5});
    Tensor* bad = add(ctx, a, b);
    ASSERT_NE(bad, nullptr);
    Tensor* later = relu(ctx, bad);  // chaining stays safe
    EXPECT_FALSE(ctx.ok());
    EXPECT_EQ(ctx.status().code(), StatusCode::InvalidArgument);
    EXPECT_NE(ctx.status().message().find("add"), std::string::npos);
    auto g = Graph::build({later});
    ASSERT_FALSE(g.is_ok());
    EXPECT_EQ(g.status().code(), StatusCode::InvalidArgument);
    // The first error is kept.
    mul_mat(ctx, a, b);
    EXPECT_NE(ctx.status().message().find("add"), std::string::npos);
}

struct BadBuild {
    const char* name;
    Tensor* (*build)(Context&);
    const char* op;
};

class BuilderRejects : public ::testing::TestWithParam<BadBuild> {};

TEST_P(BuilderRejects, WithInvalidArgument) {
    Context ctx;
    Tensor* t = GetParam().build(ctx);
    ASSERT_NE(t, nullptr);
    ASSERT_FALSE(ctx.ok());
    EXPECT_EQ(ctx.status().code(), StatusCode::InvalidArgument);
    EXPECT_NE(ctx.status().message().find(GetParam().op), std::string::npos) << ctx.status().message();
}

Tensor* f32(Context& ctx, std::initializer_list<int64_t> ne) { return ctx.new_tensor(DType::F32, ne); }

INSTANTIATE_TEST_SUITE_P(
    Shapes, BuilderRejects,
    ::testing::Values(
        BadBuild{"mul_mat_k", [](Context& c) { return mul_mat(c, f32(c, {4, 3}), f32(c, {5, 2})); }, "mul_mat"},
        BadBuild{"mul_mat_batch", [](Context& c) { return mul_mat(c, f32(c, {4, 3, 2}), f32(c, {4, 2, 3})); }, "mul_mat"},
        BadBuild{"reshape_count", [](Context& c) { return reshape(c, f32(c, {4, 3}), {5, 2, 1, 1}); }, "reshape"},
        BadBuild{"reshape_noncontig", [](Context& c) { return reshape(c, transpose(c, f32(c, {4, 3})), {12, 1, 1, 1}); }, "reshape"},
        BadBuild{"view_past_end", [](Context& c) { return view_1d(c, f32(c, {4}), 3, 8); }, "view"},
        BadBuild{"permute_axes", [](Context& c) { return permute(c, f32(c, {4}), {0, 0, 1, 2}); }, "permute"},
        BadBuild{"concat_dims", [](Context& c) { return concat(c, f32(c, {4, 3}), f32(c, {4, 2}), 0); }, "concat"},
        BadBuild{"glu_odd", [](Context& c) { return swiglu(c, f32(c, {5, 2})); }, "glu"},
        BadBuild{"rope_odd_dims", [](Context& c) {
                     RopeParams p;
                     p.n_dims = 3;
                     return rope(c, f32(c, {8, 2, 3}), c.new_tensor(DType::I32, {3}), p);
                 }, "rope"},
        BadBuild{"rope_positions", [](Context& c) {
                     RopeParams p;
                     p.n_dims = 8;
                     return rope(c, f32(c, {8, 2, 3}), c.new_tensor(DType::I32, {4}), p);
                 }, "rope"},
        BadBuild{"get_rows_f32_index", [](Context& c) { return get_rows(c, f32(c, {4, 3}), f32(c, {2})); }, "get_rows"},
        BadBuild{"cpy_count", [](Context& c) { return cpy(c, f32(c, {4}), f32(c, {5})); }, "cpy"},
        BadBuild{"softmax_mask", [](Context& c) { return soft_max_ext(c, f32(c, {4, 3}), f32(c, {5, 3}), 1.0f, 0.0f); }, "soft_max"},
        BadBuild{"attn_gqa", [](Context& c) {
                     return flash_attn_ext(c, f32(c, {8, 2, 3}), f32(c, {8, 4, 2}), f32(c, {8, 4, 2}), nullptr, 1.0f);
                 }, "flash_attn_ext"},
        BadBuild{"unary_int", [](Context& c) { return silu(c, c.new_tensor(DType::I32, {4})); }, "unary"},
        BadBuild{"negative_dim", [](Context& c) { return c.new_tensor(DType::F32, {4, -1}); }, "new_tensor"},
        BadBuild{"arange_empty", [](Context& c) { return arange(c, 3.0f, 1.0f, 1.0f); }, "arange"}),
    [](const ::testing::TestParamInfo<BadBuild>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace xb
