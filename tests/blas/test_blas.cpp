// The BLAS backend: mul_mat and out_prod through cblas_sgemm against a double reference (operand
// types, broadcast batches, transposed, permuted and strided operands, odd sizes), what it claims
// and refuses, the CPU buffer type it shares, and its thread settings.
#include <gtest/gtest.h>

#if defined(XB_HAVE_BLAS)

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "alloc/context_alloc.hpp"
#include "backend/host_threads.hpp"
#include "backend/registry.hpp"
#include "builtin/builtin_backends.hpp"
#include "backend/tensor_io.hpp"
#include "blas/blas_backend.hpp"
#include "blas/openblas.hpp"
#include "core/ops.hpp"
#include "backend/host_buffer.hpp"
#include "local_registry.hpp"

namespace xb {
namespace {

Device& blas_device() {
    Device* d = global_registry().dev_by_name("BLAS");
    XB_CHECK_MSG(d != nullptr, "the BLAS device is not registered");
    return *d;
}

Device& cpu_device() { return *global_registry().dev_by_name("CPU"); }

std::unique_ptr<blas::BlasBackend> make_blas(Device& device, std::string_view params = {}) {
    auto b = device.init_backend(params);
    XB_CHECK_MSG(b.is_ok(), b.status().to_string().c_str());
    return std::unique_ptr<blas::BlasBackend>(static_cast<blas::BlasBackend*>(std::move(b).value().release()));
}

std::unique_ptr<blas::BlasBackend> make_blas(std::string_view params = {}) { return make_blas(blas_device(), params); }


// --- the double reference ------------------------------------------------------------------------

struct Values {
    std::array<int64_t, 4> ne;
    std::vector<float> v;  // logical order, as the backend sees the operand (after rounding)
    double at(int64_t i0, int64_t i1, int64_t i2, int64_t i3) const {
        return v[static_cast<size_t>(i0 + ne[0] * (i1 + ne[1] * (i2 + ne[2] * i3)))];
    }
};

Values values_of(const Tensor& t) {
    auto v = tensor_get_f32(t);
    XB_CHECK_MSG(v.is_ok(), v.status().to_string().c_str());
    return {t.ne, std::move(v).value()};
}

// Each result element against sum_l x_l * y_l in double, within the f32 error bound of a dot product
// of k terms (a few k ulp of sum |x_l y_l|); `terms(i, j, i2, i3, fn)` calls fn(x, y) for every term.
using TermFn = std::function<void(double, double)>;
using Terms = std::function<void(int64_t, int64_t, int64_t, int64_t, const TermFn&)>;

testing::AssertionResult matches_products(const Values& out, int64_t k, const Terms& terms) {
    const double ulp = std::ldexp(1.0, -24);
    for (int64_t i3 = 0; i3 < out.ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < out.ne[2]; ++i2)
            for (int64_t j = 0; j < out.ne[1]; ++j)
                for (int64_t i = 0; i < out.ne[0]; ++i) {
                    double sum = 0.0, mag = 0.0;
                    terms(i, j, i2, i3, [&](double x, double y) {
                        sum += x * y;
                        mag += std::abs(x * y);
                    });
                    const double got = out.at(i, j, i2, i3);
                    const double bound = 4.0 * static_cast<double>(k + 2) * ulp * mag + 1e-30;
                    if (!(std::abs(got - sum) <= bound)) {
                        return testing::AssertionFailure()
                               << "at [" << i << ", " << j << ", " << i2 << ", " << i3 << "]: got " << got
                               << ", reference " << sum << ", bound " << bound;
                    }
                }
    return testing::AssertionSuccess();
}

testing::AssertionResult matches_reference(const Tensor& out) {
    const Values a = values_of(*out.src[0]);
    const Values b = values_of(*out.src[1]);
    const Values dst = values_of(out);
    const int64_t r2 = b.ne[2] / a.ne[2], r3 = b.ne[3] / a.ne[3];
    if (out.op == Op::MulMat) {
        // dst[m, n] = dot(row m of a, row n of b)
        return matches_products(dst, a.ne[0], [&](int64_t m, int64_t n, int64_t i2, int64_t i3, const TermFn& fn) {
            for (int64_t l = 0; l < a.ne[0]; ++l) fn(a.at(l, m, i2 / r2, i3 / r3), b.at(l, n, i2, i3));
        });
    }
    // out_prod: dst[i, j] = sum_l a[i, l] * b[j, l]
    return matches_products(dst, a.ne[1], [&](int64_t i, int64_t j, int64_t i2, int64_t i3, const TermFn& fn) {
        for (int64_t l = 0; l < a.ne[1]; ++l) fn(a.at(i, l, i2 / r2, i3 / r3), b.at(j, l, i2, i3));
    });
}

// Fills every leaf of `graph` with seeded values in [-1, 1].
void fill_leafs(const Graph& graph, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (Tensor* leaf : graph.leafs()) {
        std::vector<float> v(static_cast<size_t>(leaf->nelements()));
        for (float& x : v) x = dist(rng);
        XB_CHECK(tensor_set_f32(*leaf, v).is_ok());
    }
}

// --- products through the backend ------------------------------------------------------------------

struct ProductCase {
    std::string name;
    std::function<Tensor*(Context&)> build;
};
void PrintTo(const ProductCase& c, std::ostream* os) { *os << c.name; }

Tensor* input(Context& ctx, DType t, std::array<int64_t, 4> ne) {
    return ctx.new_tensor(t, std::span<const int64_t>(ne.data(), ne.size()));
}

const char* tag(DType t) { return dtype_name(t); }

std::vector<ProductCase> product_cases() {
    std::vector<ProductCase> cases;
    const DType types[] = {DType::F32, DType::F16, DType::BF16};
    for (DType ta : types) {
        for (DType tb : types) {
            const std::string suffix = std::string(tag(ta)) + "_" + tag(tb);
            cases.push_back({"mul_mat_odd_" + suffix, [=](Context& c) {
                                 return mul_mat(c, input(c, ta, {37, 19, 1, 1}), input(c, tb, {37, 23, 1, 1}));
                             }});
            cases.push_back({"mul_mat_bcast23_" + suffix, [=](Context& c) {
                                 return mul_mat(c, input(c, ta, {29, 11, 2, 3}), input(c, tb, {29, 7, 4, 6}));
                             }});
        }
        const std::string t = tag(ta);
        cases.push_back({"mul_mat_gemv_" + t, [=](Context& c) {
                             return mul_mat(c, input(c, ta, {67, 45, 1, 1}), input(c, DType::F32, {67, 1, 1, 1}));
                         }});
        cases.push_back({"mul_mat_gemv_batched_" + t, [=](Context& c) {
                             return mul_mat(c, input(c, ta, {67, 45, 1, 1}), input(c, DType::F32, {67, 1, 3, 2}));
                         }});
        // A 2-D a over a batch of b stored as one matrix: a single sgemm call.
        cases.push_back({"mul_mat_2d_a_batched_b_" + t, [=](Context& c) {
                             return mul_mat(c, input(c, ta, {64, 48, 1, 1}), input(c, DType::F32, {64, 5, 3, 2}));
                         }});
        cases.push_back(
            {"mul_mat_transposed_a_" + t, [=](Context& c) {
                 return mul_mat(c, transpose(c, input(c, ta, {13, 31, 1, 1})), input(c, DType::F32, {31, 9, 1, 1}));
             }});
        cases.push_back({"mul_mat_permuted_a_" + t, [=](Context& c) {
                             Tensor* a = permute(c, input(c, ta, {33, 2, 9, 1}), {0, 2, 1, 3});
                             return mul_mat(c, a, input(c, DType::F32, {33, 5, 2, 1}));
                         }});
        cases.push_back({"out_prod_" + t, [=](Context& c) {
                             return out_prod(c, input(c, ta, {13, 9, 1, 1}), input(c, DType::F32, {7, 9, 1, 1}));
                         }});
        cases.push_back({"out_prod_bcast23_" + t, [=](Context& c) {
                             return out_prod(c, input(c, ta, {13, 9, 2, 1}), input(c, ta, {7, 9, 4, 3}));
                         }});
        cases.push_back(
            {"out_prod_transposed_a_" + t, [=](Context& c) {
                 return out_prod(c, transpose(c, input(c, ta, {21, 17, 1, 1})), input(c, DType::F32, {5, 21, 1, 1}));
             }});
    }
    cases.push_back({"mul_mat_k1", [](Context& c) {
                         return mul_mat(c, input(c, DType::F32, {1, 5, 1, 1}), input(c, DType::F32, {1, 3, 1, 1}));
                     }});
    // k = 1 with a transposed: a single column stored with a stride.
    cases.push_back(
        {"mul_mat_k1_transposed_a", [](Context& c) {
             return mul_mat(c, transpose(c, input(c, DType::F32, {5, 1, 1, 1})), input(c, DType::F32, {1, 3, 1, 1}));
         }});
    cases.push_back({"mul_mat_1x1", [](Context& c) {
                         return mul_mat(c, input(c, DType::F32, {17, 1, 1, 1}), input(c, DType::F32, {17, 1, 1, 1}));
                     }});
    cases.push_back(
        {"mul_mat_transposed_b_f32", [](Context& c) {
             return mul_mat(c, input(c, DType::F32, {31, 13, 1, 1}), transpose(c, input(c, DType::F32, {9, 31, 1, 1})));
         }});
    cases.push_back({"mul_mat_transposed_both_batched_f32", [](Context& c) {
                         Tensor* a = transpose(c, input(c, DType::F32, {13, 31, 2, 1}));
                         return mul_mat(c, a, transpose(c, input(c, DType::F32, {9, 31, 4, 1})));
                     }});
    // Rows of a wider matrix (ld > k, used in place) and a column window (both dims strided: packed).
    cases.push_back({"mul_mat_row_window_f32", [](Context& c) {
                         Tensor* wide = input(c, DType::F32, {40, 12, 1, 1});
                         Tensor* a = view_2d(c, wide, 25, 12, wide->nb[1], 3 * sizeof(float));
                         return mul_mat(c, a, input(c, DType::F32, {25, 6, 1, 1}));
                     }});
    cases.push_back({"mul_mat_strided_both_dims_f32", [](Context& c) {
                         Tensor* m = input(c, DType::F32, {12, 40, 1, 1});
                         Tensor* t = transpose(c, m);                                // [40, 12], rows strided
                         Tensor* a = view_2d(c, t, 25, 12, t->nb[1], 2 * t->nb[0]);  // elements strided too
                         Tensor* sub = view(c, a, {25, 6, 1, 1}, {2 * a->nb[1], a->nb[1] * 12, a->nb[1] * 12}, 0);
                         return mul_mat(c, sub, input(c, DType::F32, {25, 4, 1, 1}));
                     }});
    cases.push_back({"mul_mat_permuted_b_batches_f32", [](Context& c) {
                         Tensor* b = permute(c, input(c, DType::F32, {32, 3, 10, 2}), {0, 2, 1, 3});  // [32, 10, 3, 2]
                         return mul_mat(c, input(c, DType::F32, {32, 17, 1, 2}), b);
                     }});
    cases.push_back(
        {"mul_mat_large_f16", [](Context& c) {
             return mul_mat(c, input(c, DType::F16, {256, 130, 1, 1}), input(c, DType::F32, {256, 33, 1, 1}));
         }});
    cases.push_back({"out_prod_transposed_b_f32", [](Context& c) {
                         return out_prod(c, input(c, DType::F32, {13, 33, 1, 1}),
                                         transpose(c, input(c, DType::F32, {33, 7, 1, 1})));
                     }});
    return cases;
}

class BlasProduct : public testing::TestWithParam<ProductCase> {};

TEST_P(BlasProduct, MatchesDoubleReference) {
    auto blas = make_blas();
    Context ctx;
    Tensor* out = GetParam().build(ctx);
    auto graph = Graph::build({out});
    ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
    for (const Tensor* n : graph->nodes()) ASSERT_TRUE(blas->supports_op(*n)) << n->op_label();
    auto buffer = alloc_ctx_tensors(ctx, *blas);
    ASSERT_TRUE(buffer.is_ok()) << buffer.status().to_string();
    fill_leafs(*graph, 42);
    ASSERT_TRUE(blas->graph_compute(*graph).is_ok());
    EXPECT_TRUE(matches_reference(*out));
}

INSTANTIATE_TEST_SUITE_P(Blas, BlasProduct, testing::ValuesIn(product_cases()),
                         [](const testing::TestParamInfo<ProductCase>& info) { return info.param.name; });

// --- the device ------------------------------------------------------------------------------------

TEST(BlasDevice, IsAnAcceleratorOverTheCpuBufferType) {
    Device& blas = blas_device();
    EXPECT_EQ(blas.type(), DeviceType::Accel);
    EXPECT_NE(blas.description().find("OpenBLAS"), std::string::npos) << blas.description();
    EXPECT_EQ(&blas.buffer_type(), &cpu_device().buffer_type()) << "shares the CPU buffer type";
    EXPECT_TRUE(blas.supports_buft(cpu_device().buffer_type()));
    EXPECT_EQ(blas.memory().total, cpu_device().memory().total);
    const DeviceCaps caps = blas.caps();
    EXPECT_FALSE(caps.async);
    EXPECT_FALSE(caps.events);
    EXPECT_TRUE(caps.buffer_from_host_ptr);
    EXPECT_EQ(blas.host_buffer_type(), nullptr);

    alignas(64) float storage[16] = {};
    auto mapped = blas.buffer_from_host_ptr(storage, sizeof storage, sizeof storage);
    ASSERT_TRUE(mapped.is_ok()) << mapped.status().to_string();
    EXPECT_TRUE(blas.supports_buft((*mapped)->type()));
}

TEST(BlasDevice, ClaimsOnlyMatrixProductsAndViews) {
    Device& blas = blas_device();
    Context ctx;
    Tensor* a = ctx.new_tensor(DType::F32, {8, 4});
    Tensor* b = ctx.new_tensor(DType::F32, {8, 4});
    EXPECT_TRUE(blas.supports_op(*mul_mat(ctx, a, b)));
    EXPECT_TRUE(
        blas.supports_op(*mul_mat(ctx, ctx.new_tensor(DType::BF16, {8, 4}), ctx.new_tensor(DType::F16, {8, 2}))));
    EXPECT_TRUE(blas.supports_op(*out_prod(ctx, a, b)));
    EXPECT_TRUE(blas.supports_op(*transpose(ctx, a)));
    EXPECT_TRUE(blas.supports_op(*a));
    EXPECT_FALSE(blas.supports_op(*add(ctx, a, b)));
    EXPECT_FALSE(blas.supports_op(*soft_max(ctx, a)));
    EXPECT_FALSE(blas.supports_op(*rms_norm(ctx, a, 1e-5f)));
    EXPECT_FALSE(blas.supports_op(*cont(ctx, transpose(ctx, a))));
    EXPECT_FALSE(blas.offload_op(*mul_mat(ctx, a, b)));
}

TEST(BlasDevice, MinBatchKeepsSmallProductsOffTheDevice) {
    xbt::LocalRegistry local;  // the settings changed here stay with this test
    Device& blas = *local.device("BLAS");
    Context ctx;
    Tensor* small = mul_mat(ctx, ctx.new_tensor(DType::F32, {64, 64}), ctx.new_tensor(DType::F32, {64, 8}));
    Tensor* big = mul_mat(ctx, ctx.new_tensor(DType::F32, {64, 64}), ctx.new_tensor(DType::F32, {64, 32}));
    ASSERT_TRUE(blas.configure("min_batch=32").is_ok());
    EXPECT_NE(blas.settings().find("min_batch=32"), std::string::npos) << blas.settings();
    EXPECT_FALSE(blas.supports_op(*small));
    EXPECT_TRUE(blas.supports_op(*big));
    ASSERT_TRUE(blas.configure("min_batch=0").is_ok());
    EXPECT_TRUE(blas.supports_op(*small));
}

TEST(BlasDevice, ThreadSettingsAreValidated) {
    xbt::LocalRegistry local;  // the settings changed here stay with this test
    Device& blas = *local.device("BLAS");
    EXPECT_NE(blas.settings().find("threads=" + std::to_string(default_host_threads())), std::string::npos)
        << "default: all cores; got " << blas.settings();
    for (const char* bad :
         {"threads=0", "threads=-2", "threads=abc", "threads=2x", "threads=", "threads", "threads=99999999999"}) {
        auto b = blas.init_backend(bad);
        ASSERT_FALSE(b.is_ok()) << bad;
        EXPECT_EQ(b.status().code(), StatusCode::InvalidArgument) << bad;
        EXPECT_EQ(blas.configure(bad).code(), StatusCode::InvalidArgument) << bad;
    }
    auto unknown = blas.init_backend("colour=blue");
    ASSERT_FALSE(unknown.is_ok());
    EXPECT_EQ(unknown.status().code(), StatusCode::InvalidArgument);
    EXPECT_NE(unknown.status().message().find("threads"), std::string::npos) << "lists the known keys";
    EXPECT_EQ(blas.configure("colour=blue").code(), StatusCode::InvalidArgument);
    EXPECT_EQ(blas.init_backend("min_batch=4").status().code(), StatusCode::InvalidArgument)
        << "min_batch is a device setting";

    auto two = make_blas(blas, "threads=2");
    EXPECT_EQ(two->n_threads(), 2);
    auto follower = make_blas(blas);
    ASSERT_TRUE(blas.configure("threads=3").is_ok());
    EXPECT_NE(blas.settings().find("threads=3"), std::string::npos) << blas.settings();
    EXPECT_EQ(follower->n_threads(), 3) << "a backend without its own count follows the device";
    EXPECT_EQ(two->n_threads(), 2);
    EXPECT_FALSE(follower->set_n_threads(0));
    EXPECT_TRUE(follower->set_n_threads(1));
    EXPECT_EQ(follower->n_threads(), 1);
}

// --- computing graphs ------------------------------------------------------------------------------

TEST(BlasBackend, UnsupportedNodeIsANotSupportedStatusNamingIt) {
    auto blas = make_blas();
    Context ctx;
    Tensor* a = ctx.new_tensor(DType::F32, {8, 4});
    Tensor* y = mul_mat(ctx, a, a);
    Tensor* z = add(ctx, y, y);
    z->name = "the_sum";
    auto graph = Graph::build({z});
    ASSERT_TRUE(graph.is_ok());
    auto buffer = alloc_ctx_tensors(ctx, *blas);
    ASSERT_TRUE(buffer.is_ok());
    fill_leafs(*graph, 1);
    ASSERT_TRUE(tensor_memset(*y, 0, 0, y->nbytes()).is_ok());
    const Status s = blas->graph_compute(*graph);
    EXPECT_EQ(s.code(), StatusCode::NotSupported);
    EXPECT_NE(s.message().find("the_sum"), std::string::npos) << s.message();
    auto yv = tensor_get_f32(*y);
    ASSERT_TRUE(yv.is_ok());
    for (float v : *yv) EXPECT_EQ(v, 0.0f) << "nothing is computed when a node is refused";
}

// Nodes the builders would not make (an integer operand, a result with strided elements) are
// refused by supports_op and by graph_compute alike.
TEST(BlasBackend, NodesOutsideTheHandledLayoutsAreRefused) {
    auto blas = make_blas();
    Context ctx;
    Tensor* a = ctx.new_tensor(DType::F32, {8, 4});
    Tensor* ints = ctx.new_tensor(DType::I32, {8, 3});
    Tensor* y = mul_mat(ctx, a, a);
    Tensor* by_hand = ctx.new_tensor(DType::F32, {4, 3});
    by_hand->op = Op::MulMat;
    by_hand->src[0] = a;
    by_hand->src[1] = ints;
    auto graph = Graph::build({y, by_hand});
    ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
    auto buffer = alloc_ctx_tensors(ctx, *blas);
    ASSERT_TRUE(buffer.is_ok());
    EXPECT_FALSE(blas->supports_op(*by_hand));
    EXPECT_EQ(blas->graph_compute(*graph).code(), StatusCode::NotSupported);

    y->nb[0] = 2 * sizeof(float);  // elements of a row apart: sgemm cannot write it
    EXPECT_FALSE(blas->supports_op(*y));
}

TEST(BlasBackend, UnallocatedNodeIsAnError) {
    auto blas = make_blas();
    Context ctx;
    Tensor* a = ctx.new_tensor(DType::F32, {8, 4});
    auto graph = Graph::build({mul_mat(ctx, a, a)});
    ASSERT_TRUE(graph.is_ok());
    const Status s = blas->graph_compute(*graph);
    EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
    EXPECT_NE(s.message().find("not allocated"), std::string::npos) << s.message();
}

// Memory that only a device can reach (its buffer type is not host): the backend must refuse it.
class NotHostBufferType final : public BufferType {
public:
    const char* name() const override { return "NOT_HOST"; }
    Result<std::unique_ptr<Buffer>> alloc_buffer(size_t size) override {
        return std::unique_ptr<Buffer>(std::make_unique<HostBuffer>(*this, AlignedBytes(size, kHostAlignment)));
    }
    size_t alignment() const override { return 64; }
    Device& device() const override { return cpu_device(); }
};

TEST(BlasBackend, TensorsOutsideHostMemoryAreRefused) {
    auto blas = make_blas();
    NotHostBufferType not_host;
    EXPECT_FALSE(blas->supports_buft(not_host));
    Context ctx;
    Tensor* a = ctx.new_tensor(DType::F32, {8, 4});
    auto graph = Graph::build({mul_mat(ctx, a, a)});
    ASSERT_TRUE(graph.is_ok());
    auto buffer = alloc_ctx_tensors(ctx, not_host);
    ASSERT_TRUE(buffer.is_ok()) << buffer.status().to_string();
    const Status s = blas->graph_compute(*graph);
    EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
    EXPECT_NE(s.message().find("NOT_HOST"), std::string::npos) << s.message();
}

// The scheduler's case: one graph in a CPU buffer, its mul_mat computed by BLAS and the rest by the
// CPU backend, with no copies between them.
TEST(BlasBackend, SharesCpuBuffersWithTheCpuBackend) {
    auto blas = make_blas();
    auto cpu = global_registry().init_by_name("CPU");
    ASSERT_TRUE(cpu.is_ok());
    Context ctx;
    Tensor* w = ctx.new_tensor(DType::F16, {96, 40});
    Tensor* x = ctx.new_tensor(DType::F32, {96, 12});
    Tensor* y = mul_mat(ctx, w, x);
    Tensor* z = relu(ctx, y);
    auto graph = Graph::build({z});
    ASSERT_TRUE(graph.is_ok());
    ASSERT_EQ(graph->n_nodes(), 2);
    auto buffer = alloc_ctx_tensors(ctx, **cpu);
    ASSERT_TRUE(buffer.is_ok());
    fill_leafs(*graph, 5);
    ASSERT_TRUE(blas->supports_buft((*buffer)->parts().front()->type()));
    ASSERT_TRUE(blas->graph_compute(graph->view(0, 1)).is_ok());
    ASSERT_TRUE((*cpu)->graph_compute(graph->view(1, 2)).is_ok());
    EXPECT_TRUE(matches_reference(*y));
    auto yv = tensor_get_f32(*y);
    auto zv = tensor_get_f32(*z);
    ASSERT_TRUE(yv.is_ok() && zv.is_ok());
    for (size_t i = 0; i < yv->size(); ++i) EXPECT_EQ((*zv)[i], std::max((*yv)[i], 0.0f));
}

TEST(BlasBackend, EmptySumIsZero) {
    auto blas = make_blas();
    Context ctx;
    Tensor* y = mul_mat(ctx, ctx.new_tensor(DType::F32, {0, 5}), ctx.new_tensor(DType::F32, {0, 3}));
    auto graph = Graph::build({y});
    ASSERT_TRUE(graph.is_ok());
    auto buffer = alloc_ctx_tensors(ctx, *blas);
    ASSERT_TRUE(buffer.is_ok()) << buffer.status().to_string();
    ASSERT_TRUE(tensor_memset(*y, 0xff, 0, y->nbytes()).is_ok());
    ASSERT_TRUE(blas->graph_compute(*graph).is_ok());
    auto v = tensor_get_f32(*y);
    ASSERT_TRUE(v.is_ok());
    ASSERT_EQ(v->size(), 15u);
    for (float f : *v) EXPECT_EQ(f, 0.0f);
}

TEST(BlasBackend, ScratchIsReusedAndUnusedForF32) {
    Context ctx;
    Tensor* y32 = mul_mat(ctx, ctx.new_tensor(DType::F32, {64, 32}), ctx.new_tensor(DType::F32, {64, 8}));
    Tensor* y16 = mul_mat(ctx, ctx.new_tensor(DType::F16, {64, 32}), ctx.new_tensor(DType::F32, {64, 8}));
    auto g32 = Graph::build({y32});
    auto g16 = Graph::build({y16});
    ASSERT_TRUE(g32.is_ok() && g16.is_ok());
    auto blas = make_blas();
    auto buffer = alloc_ctx_tensors(ctx, *blas);
    ASSERT_TRUE(buffer.is_ok());
    fill_leafs(*g32, 3);
    fill_leafs(*g16, 4);
    ASSERT_TRUE(blas->graph_compute(*g32).is_ok());
    EXPECT_EQ(blas->scratch_bytes(), 0u) << "contiguous f32 operands go to sgemm in place";
    ASSERT_TRUE(blas->graph_compute(*g16).is_ok());
    const size_t after_first = blas->scratch_bytes();
    EXPECT_GE(after_first, 64u * 32u * sizeof(float));
    ASSERT_TRUE(blas->graph_compute(*g16).is_ok());
    EXPECT_EQ(blas->scratch_bytes(), after_first);
    EXPECT_TRUE(matches_reference(*y16));
}

// Conversions of large operands are split over the backend's threads (rows, or columns of a
// transposed operand); the result must not depend on the split.
TEST(BlasBackend, LargeConversionsSplitOverThreads) {
    auto blas = make_blas("threads=3");
    Context ctx;
    Tensor* by_rows = mul_mat(ctx, ctx.new_tensor(DType::F16, {600, 1000}), ctx.new_tensor(DType::BF16, {600, 3}));
    Tensor* by_cols =
        mul_mat(ctx, transpose(ctx, ctx.new_tensor(DType::BF16, {900, 700})), ctx.new_tensor(DType::F32, {700, 2}));
    auto graph = Graph::build({by_rows, by_cols});
    ASSERT_TRUE(graph.is_ok());
    auto buffer = alloc_ctx_tensors(ctx, *blas);
    ASSERT_TRUE(buffer.is_ok());
    fill_leafs(*graph, 11);
    ASSERT_TRUE(blas->graph_compute(*graph).is_ok());
    EXPECT_TRUE(matches_reference(*by_rows));
    EXPECT_TRUE(matches_reference(*by_cols));
}

// Products big enough to be split into column blocks over OpenMP threads (blas/openblas.hpp):
// widths that are not a multiple of the block grain, a transposed weight (blocks start at rows
// of its storage), a transposed activation, and a 2-D weight over a batch (one call, split).
TEST(BlasBackend, ProductsSplitIntoColumnBlocksMatchTheReference) {
    auto blas = make_blas("threads=3");
    Context ctx;
    Tensor* plain = mul_mat(ctx, ctx.new_tensor(DType::F32, {301, 517}), ctx.new_tensor(DType::F32, {301, 37}));
    Tensor* weight_t =
        mul_mat(ctx, transpose(ctx, ctx.new_tensor(DType::F32, {403, 257})), ctx.new_tensor(DType::F32, {257, 41}));
    Tensor* act_t =
        mul_mat(ctx, ctx.new_tensor(DType::F32, {263, 389}), transpose(ctx, ctx.new_tensor(DType::F32, {45, 263})));
    Tensor* batched = mul_mat(ctx, ctx.new_tensor(DType::F16, {211, 333}), ctx.new_tensor(DType::F32, {211, 13, 5, 1}));
    auto graph = Graph::build({plain, weight_t, act_t, batched});
    ASSERT_TRUE(graph.is_ok());
    auto buffer = alloc_ctx_tensors(ctx, *blas);
    ASSERT_TRUE(buffer.is_ok());
    fill_leafs(*graph, 23);
    ASSERT_TRUE(blas->graph_compute(*graph).is_ok());
    for (const Tensor* out : {plain, weight_t, act_t, batched}) EXPECT_TRUE(matches_reference(*out)) << out->op_label();
}

TEST(BlasBackend, ThreadCountsAgreeAndOpenBlasSettingIsRestored) {
    Context ctx;
    Tensor* y = mul_mat(ctx, ctx.new_tensor(DType::F32, {300, 200}), ctx.new_tensor(DType::F32, {300, 64}));
    auto graph = Graph::build({y});
    ASSERT_TRUE(graph.is_ok());
    auto one = make_blas("threads=1");
    auto buffer = alloc_ctx_tensors(ctx, *one);
    ASSERT_TRUE(buffer.is_ok());
    fill_leafs(*graph, 9);
    const int before = blas::openblas_threads();
    ASSERT_TRUE(one->graph_compute(*graph).is_ok());
    EXPECT_EQ(blas::openblas_threads(), before);
    EXPECT_TRUE(matches_reference(*y));
    auto single = tensor_get_f32(*y);
    auto two = make_blas("threads=2");
    ASSERT_TRUE(two->graph_compute(*graph).is_ok());
    EXPECT_EQ(blas::openblas_threads(), before);
    EXPECT_TRUE(matches_reference(*y));
    ASSERT_TRUE(single.is_ok());
    EXPECT_EQ(single->size(), static_cast<size_t>(y->nelements()));
}

}  // namespace
}  // namespace xb

#else

TEST(BlasBackend, NotBuilt) { GTEST_SKIP() << "built without OpenBLAS (XB_BLAS=OFF or not found)"; }

#endif
