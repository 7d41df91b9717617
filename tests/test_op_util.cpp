// The op conformance harness (see op_test_util.hpp): input generation, running a case on a backend,
// comparison with the reference, the parameterised test, and the multi-threaded CPU run.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>
#include <sstream>

#include "alloc/context_alloc.hpp"
#include "backend/registry.hpp"
#include "backend/tensor_io.hpp"
#include "core/graph.hpp"
#include "op_test_util.hpp"

namespace xbt {

// --- input generation ---------------------------------------------------------------------------

Generator uniform(float lo, float hi) {
    return [lo, hi](const Shape& ne, std::mt19937& rng) {
        std::uniform_real_distribution<float> dist(lo, hi);
        std::vector<float> v(static_cast<size_t>(element_count(ne)));
        for (float& x : v) x = dist(rng);
        return v;
    };
}

Generator signed_uniform(float lo, float hi) {
    return [lo, hi](const Shape& ne, std::mt19937& rng) {
        std::uniform_real_distribution<float> dist(lo, hi);
        std::bernoulli_distribution negative(0.5);
        std::vector<float> v(static_cast<size_t>(element_count(ne)));
        for (float& x : v) x = negative(rng) ? -dist(rng) : dist(rng);
        return v;
    };
}

Generator random_indices(int64_t n) {
    return [n](const Shape& ne, std::mt19937& rng) {
        std::uniform_int_distribution<int64_t> dist(0, n - 1);
        std::vector<float> v(static_cast<size_t>(element_count(ne)));
        for (float& x : v) x = static_cast<float>(dist(rng));
        return v;
    };
}

Generator distinct_indices(int64_t n) {
    return [n](const Shape& ne, std::mt19937& rng) {
        std::vector<float> v;
        std::vector<int64_t> all(static_cast<size_t>(n));
        for (int64_t slice = 0; slice < element_count(ne) / ne[0]; ++slice) {
            std::iota(all.begin(), all.end(), 0);
            std::shuffle(all.begin(), all.end(), rng);
            for (int64_t i = 0; i < ne[0]; ++i) v.push_back(static_cast<float>(all[static_cast<size_t>(i)]));
        }
        return v;
    };
}

Generator causal_mask(float lo, float hi, int n_past) {
    return [lo, hi, n_past](const Shape& ne, std::mt19937& rng) {
        std::vector<float> v = uniform(lo, hi)(ne, rng);
        for_each_index(ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
            if (i0 > n_past + i1) v[static_cast<size_t>(i0 + ne[0] * (i1 + ne[1] * (i2 + ne[2] * i3)))] = -INFINITY;
        });
        return v;
    };
}

xb::Tensor* CaseBuilder::input(xb::DType type, Shape ne, Generator generate) {
    xb::Tensor* t = ctx_->new_tensor(type, std::span<const int64_t>(ne.data(), ne.size()));
    t->name = "in" + std::to_string(inputs_.size());
    t->set_input();
    inputs_.push_back({t, std::move(generate)});
    return t;
}

void PrintTo(const OpCase& c, std::ostream* os) { *os << c.name; }

double tolerance_for_output(xb::DType type) {
    switch (type) {
        case xb::DType::F16: return kTolF16;
        case xb::DType::BF16: return kTolBF16;
        default: return kTolF32;
    }
}

std::string type_tag(xb::DType t) { return xb::dtype_name(t); }

// --- running a case ------------------------------------------------------------------------------

namespace {

// A seed per (case, input) so that every case sees the same values on every device and run.
uint32_t seed_for(const std::string& case_name, size_t input) {
    uint32_t h = 2166136261u;  // FNV-1a
    for (unsigned char c : case_name) h = (h ^ c) * 16777619u;
    return h ^ static_cast<uint32_t>(input * 0x9e3779b9u);
}

template <typename Int>
xb::Status set_integers(xb::Tensor& t, const std::vector<float>& values) {
    std::vector<Int> ints(values.size());
    std::transform(values.begin(), values.end(), ints.begin(), [](float v) { return static_cast<Int>(v); });
    return xb::tensor_set(t, ints.data(), 0, ints.size() * sizeof(Int));
}

// Writes `values` into the input and returns what the reference sees: integers as generated,
// floats as read back after being stored in the tensor's type.
xb::Result<RefArray> store_input(xb::Tensor& t, const std::vector<float>& values) {
    const Shape ne = t.ne;
    if (t.type == xb::DType::I32 || t.type == xb::DType::I64) {
        XB_RETURN_IF_ERROR(t.type == xb::DType::I32 ? set_integers<int32_t>(t, values)
                                                    : set_integers<int64_t>(t, values));
        return RefArray(ne, std::vector<double>(values.begin(), values.end()));
    }
    XB_RETURN_IF_ERROR(xb::tensor_set_f32(t, values));
    XB_ASSIGN_OR_RETURN(std::vector<float> stored, xb::tensor_get_f32(t));
    return RefArray(ne, std::vector<double>(stored.begin(), stored.end()));
}

// The first node of the graph that the backend cannot compute, described; empty when none.
std::string unsupported_node(const xb::Graph& graph, const xb::Backend& backend) {
    for (const xb::Tensor* node : graph.nodes()) {
        if (!backend.supports_op(*node)) {
            return std::string(backend.name()) + " does not support " + xb::op_name(node->op) + " " +
                   node->shape_string();
        }
    }
    return {};
}

// A leaf that a cpy overwrites completely (cast's own destination): its initial bytes never matter.
bool is_cpy_destination(const xb::Graph& graph, const xb::Tensor* leaf) {
    return std::any_of(graph.nodes().begin(), graph.nodes().end(),
                       [leaf](const xb::Tensor* n) { return n->op == xb::Op::Cpy && n->src[1] == leaf; });
}

// Every other leaf must be a declared input: an unfilled leaf would make the result depend on garbage.
xb::Status check_leafs_declared(const xb::Graph& graph, const CaseBuilder& b) {
    for (const xb::Tensor* leaf : graph.leafs()) {
        const bool declared = std::any_of(b.inputs().begin(), b.inputs().end(),
                                          [leaf](const InputSpec& in) { return in.tensor == leaf; });
        if (!declared && !is_cpy_destination(graph, leaf)) {
            return xb::Status(xb::StatusCode::Internal,
                              "case leaf '" + leaf->display_name() + "' is not a declared input");
        }
    }
    return xb::Status::ok();
}

// Fills every declared input from its generator; returns the inputs as the reference sees them.
xb::Result<std::vector<RefArray>> fill_inputs(const OpCase& c, const CaseBuilder& builder) {
    std::vector<RefArray> inputs;
    for (size_t i = 0; i < builder.inputs().size(); ++i) {
        const InputSpec& in = builder.inputs()[i];
        std::mt19937 rng(seed_for(c.name, i));
        XB_ASSIGN_OR_RETURN(RefArray stored, store_input(*in.tensor, in.generate(in.tensor->ne, rng)));
        inputs.push_back(std::move(stored));
    }
    return inputs;
}

// Allocates, fills and computes the graph; the output in logical order and the reference.
xb::Status compute(const OpCase& c, const CaseBuilder& builder, const xb::Graph& graph, const xb::Tensor& out,
                   xb::Backend& backend, CaseRun& run) {
    XB_ASSIGN_OR_RETURN(auto buffer, xb::alloc_ctx_tensors(builder.ctx(), backend));
    XB_ASSIGN_OR_RETURN(std::vector<RefArray> inputs, fill_inputs(c, builder));
    XB_RETURN_IF_ERROR(backend.graph_compute(graph));
    XB_ASSIGN_OR_RETURN(std::vector<float> values, xb::tensor_get_f32(out));
    run.out = RefArray(out.ne, std::vector<double>(values.begin(), values.end()));
    run.ref = c.reference(inputs);
    return xb::Status::ok();
}

}  // namespace

CaseRun run_case(const OpCase& c, xb::Backend& backend) {
    CaseRun run;
    xb::Context ctx;
    CaseBuilder builder(ctx);
    xb::Tensor* out = c.build(builder);
    out->set_output();
    auto graph = xb::Graph::build({out});
    if (!graph) {
        run.status = graph.status();
        return run;
    }
    run.unsupported = unsupported_node(*graph, backend);
    if (!run.unsupported.empty()) return run;
    run.status = check_leafs_declared(*graph, builder);
    if (run.status) run.status = compute(c, builder, *graph, *out, backend, run);
    return run;
}

// --- comparison ----------------------------------------------------------------------------------

double nmse(const RefArray& out, const RefArray& ref) {
    double err = 0.0, norm = 0.0;
    for (int64_t i = 0; i < ref.size(); ++i) {
        if (!std::isfinite(ref[i])) continue;
        err += (out[i] - ref[i]) * (out[i] - ref[i]);
        norm += ref[i] * ref[i];
    }
    return norm > 0.0 ? err / norm : err;
}

namespace {

std::string index_text(const Shape& ne, int64_t flat) {
    std::ostringstream s;
    s << "[" << flat % ne[0] << ", " << flat / ne[0] % ne[1] << ", " << flat / (ne[0] * ne[1]) % ne[2] << ", "
      << flat / (ne[0] * ne[1] * ne[2]) << "]";
    return s.str();
}

std::string shape_text(const Shape& ne) {
    std::ostringstream s;
    s << "[" << ne[0] << ", " << ne[1] << ", " << ne[2] << ", " << ne[3] << "]";
    return s.str();
}

bool same_special(double out, double ref) { return std::isnan(ref) ? std::isnan(out) : out == ref; }

// Index of the element with the largest error, for the failure message.
int64_t worst_element(const RefArray& out, const RefArray& ref) {
    int64_t worst = 0;
    double worst_err = -1.0;
    for (int64_t i = 0; i < ref.size(); ++i) {
        const double e = std::isfinite(ref[i]) ? std::abs(out[i] - ref[i]) : 0.0;
        if (e > worst_err) {
            worst_err = e;
            worst = i;
        }
    }
    return worst;
}

}  // namespace

testing::AssertionResult matches_reference(const RefArray& out, const RefArray& ref, double tolerance) {
    if (out.ne() != ref.ne()) {
        return testing::AssertionFailure()
               << "output shape " << shape_text(out.ne()) << " != reference shape " << shape_text(ref.ne());
    }
    for (int64_t i = 0; i < ref.size(); ++i) {
        const bool ref_finite = std::isfinite(ref[i]);
        if (ref_finite ? !std::isfinite(out[i]) : !same_special(out[i], ref[i])) {
            return testing::AssertionFailure()
                   << "at " << index_text(ref.ne(), i) << " output " << out[i] << ", reference " << ref[i];
        }
    }
    const double e = nmse(out, ref);
    if (e <= tolerance) return testing::AssertionSuccess();
    const int64_t w = worst_element(out, ref);
    return testing::AssertionFailure() << "NMSE " << e << " > tolerance " << tolerance << "; worst at "
                                       << index_text(ref.ne(), w) << ": output " << out[w] << ", reference " << ref[w];
}

// --- the parameterised test ------------------------------------------------------------------------

std::vector<std::string> device_names() {
    std::vector<std::string> names;
    const xb::Registry& reg = xb::Registry::global();
    for (size_t i = 0; i < reg.dev_count(); ++i) names.emplace_back(reg.dev(i).name());
    return names;
}

std::string test_name(std::string s) {
    for (char& ch : s) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    }
    return s;
}

std::string op_param_name(const testing::TestParamInfo<OpParam>& info) {
    return test_name(std::get<0>(info.param) + "_" + std::get<1>(info.param).name);
}

TEST_P(OpTest, Matches) {
    const auto& [device, op_case] = GetParam();
    auto backend = xb::Registry::global().init_by_name(device);
    ASSERT_TRUE(backend.is_ok()) << backend.status().to_string();
    const CaseRun run = run_case(op_case, **backend);
    if (!run.unsupported.empty()) GTEST_SKIP() << run.unsupported;
    ASSERT_TRUE(run.status.is_ok()) << run.status.to_string();
    EXPECT_TRUE(matches_reference(run.out, run.ref, op_case.tolerance));
    RecordProperty("nmse", testing::PrintToString(nmse(run.out, run.ref)));
}

// --- the CPU backend on three threads ------------------------------------------------------------

namespace {

std::vector<OpCase> threaded_cases() {
    std::vector<OpCase> cases = matmul_cases();
    for (OpCase& c : attention_cases()) {
        if (c.name.starts_with("soft_max")) cases.push_back(std::move(c));
    }
    return cases;
}

}  // namespace

TEST(OpThreads, CpuOnThreeThreadsMatchesReferenceAndOneThread) {
    auto threaded = xb::Registry::global().init_by_name("CPU");
    auto single = xb::Registry::global().init_by_name("CPU");
    ASSERT_TRUE(threaded.is_ok()) << threaded.status().to_string();
    ASSERT_TRUE(single.is_ok()) << single.status().to_string();
    ASSERT_TRUE((*threaded)->set_n_threads(3));
    ASSERT_TRUE((*single)->set_n_threads(1));
    for (const OpCase& c : threaded_cases()) {
        SCOPED_TRACE(c.name);
        const CaseRun three = run_case(c, **threaded);
        const CaseRun one = run_case(c, **single);
        ASSERT_TRUE(three.unsupported.empty() && one.unsupported.empty()) << three.unsupported;
        ASSERT_TRUE(three.status.is_ok()) << three.status.to_string();
        ASSERT_TRUE(one.status.is_ok()) << one.status.to_string();
        EXPECT_TRUE(matches_reference(three.out, three.ref, c.tolerance));
        // Threads only split the work: the two runs agree as closely as each agrees with the reference.
        EXPECT_TRUE(matches_reference(three.out, one.out, c.tolerance));
    }
}

}  // namespace xbt
