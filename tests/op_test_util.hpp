// Op conformance tests: a float64 reference of every op and a harness that runs op cases on every
// registered device and compares the results with the reference.
//
// A case (OpCase) builds its graph from inputs that it declares through a CaseBuilder; the harness
// fills those inputs with seeded random values, computes the graph on a backend, and compares the
// output with the case's reference, which is computed in double from the inputs as they were
// stored (after rounding to f16/bf16), so that input quantization never counts as error.
//
// Files: op_test_util.hpp (this), test_ops_reference.cpp (the reference ops), test_op_util.cpp (the
// harness, its TEST_P and the multi-threaded run), test_ops_<family>.cpp (the cases of each op family:
// elementwise, layout, reduce, attention, matmul), test_ops_errors.cpp (bad inputs, runtime errors).
// Filter with e.g. --gtest_filter='Attention/OpTest.*rope*' or '*OpTest*CPU_mul_mat*'.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <functional>
#include <ostream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "backend/backend.hpp"
#include "core/context.hpp"
#include "core/ops.hpp"
#include "core/tensor.hpp"

namespace xbt {

using Shape = std::array<int64_t, 4>;

// --- the reference toolkit -------------------------------------------------------------------------

// A dense 4-D array of doubles in the logical order of xb tensors (dim 0 fastest).
class RefArray {
public:
    RefArray() = default;
    explicit RefArray(Shape ne, double value = 0.0);
    RefArray(Shape ne, std::vector<double> values);

    const Shape& ne() const { return ne_; }
    int64_t size() const { return static_cast<int64_t>(v_.size()); }
    const std::vector<double>& values() const { return v_; }

    double& at(int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) { return v_[index(i0, i1, i2, i3)]; }
    double at(int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) const { return v_[index(i0, i1, i2, i3)]; }
    double& operator[](int64_t flat) { return v_[static_cast<size_t>(flat)]; }
    double operator[](int64_t flat) const { return v_[static_cast<size_t>(flat)]; }

private:
    size_t index(int64_t i0, int64_t i1, int64_t i2, int64_t i3) const {
        return static_cast<size_t>(i0 + ne_[0] * (i1 + ne_[1] * (i2 + ne_[2] * i3)));
    }

    Shape ne_{1, 1, 1, 1};
    std::vector<double> v_ = {0.0};
};

int64_t element_count(const Shape& ne);

// Calls fn(i0, i1, i2, i3) for every index of a tensor of shape ne, dim 0 fastest.
template <typename Fn>
void for_each_index(const Shape& ne, Fn&& fn) {
    for (int64_t i3 = 0; i3 < ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < ne[1]; ++i1)
                for (int64_t i0 = 0; i0 < ne[0]; ++i0) fn(i0, i1, i2, i3);
}

// Reference implementations, written from the op definitions in core/ops.hpp and computed in double.
namespace ref {

// --- element-wise ---
RefArray map(const RefArray& a, const std::function<double(double)>& f);
// f(a[i], b[i % ne_b]) along every dim: b is tiled over a.
RefArray binary(const RefArray& a, const RefArray& b, const std::function<double(double, double)>& f);
double gelu(double x);        // tanh approximation
double gelu_quick(double x);  // x * sigmoid(1.702 x)
double silu(double x);
double sigmoid(double x);
double unary(xb::UnaryOp op, double x);
double glu_activation(xb::GluOp op, double x);
RefArray glu(const RefArray& a, xb::GluOp op, bool swapped);  // fused halves along dim 0
RefArray glu_split(const RefArray& a, const RefArray& b, xb::GluOp op);

// --- layout and copies ---
RefArray reshape(const RefArray& a, Shape ne);                 // same elements in the same logical order
RefArray permute(const RefArray& a, std::array<int, 4> axes);  // dim i of a becomes dim axes[i]
RefArray transpose(const RefArray& a);
// The elements of a contiguous tensor's storage (its values in logical order) seen through a view
// of shape ne with element strides and an element offset.
RefArray strided_view(const RefArray& storage, Shape ne, std::array<int64_t, 4> strides, int64_t offset);
RefArray repeat(const RefArray& a, Shape ne);
RefArray concat(const RefArray& a, const RefArray& b, int dim);
RefArray pad(const RefArray& a, std::array<int, 4> after);
RefArray arange(double start, double stop, double step);
RefArray get_rows(const RefArray& a, const RefArray& rows);
RefArray set_rows(const RefArray& dst, const RefArray& src, const RefArray& rows);

// --- reductions and normalisation ---
RefArray sum(const RefArray& a);
RefArray sum_rows(const RefArray& a);
RefArray mean(const RefArray& a);
RefArray argmax(const RefArray& a);
RefArray norm(const RefArray& a, double eps);
RefArray rms_norm(const RefArray& a, double eps);

// --- attention ---
double alibi_slope(int h, int n_head, double max_bias);
RefArray soft_max(const RefArray& a, const RefArray* mask, double scale, double max_bias);
RefArray diag_mask_inf(const RefArray& a, int n_past);
RefArray rope(const RefArray& a, const RefArray& positions, const xb::RopeParams& p);
RefArray flash_attn_ext(const RefArray& q, const RefArray& k, const RefArray& v, const RefArray* mask, double scale,
                        double max_bias, double softcap);

// --- matrix products ---
RefArray mul_mat(const RefArray& a, const RefArray& b);
RefArray out_prod(const RefArray& a, const RefArray& b);

}  // namespace ref

// --- input generation ---------------------------------------------------------------------------

// Makes the values of an input of shape ne (logical order).
using Generator = std::function<std::vector<float>(const Shape& ne, std::mt19937& rng)>;

Generator uniform(float lo, float hi);
// Magnitudes uniform in [lo, hi] with random signs: values kept away from zero (divisors).
Generator signed_uniform(float lo, float hi);
// Integers uniform in [0, n), for positions or gathered row indices.
Generator random_indices(int64_t n);
// Along dim 0, distinct integers from [0, n) (a random draw without replacement in each slice),
// so that set_rows never writes one row twice.
Generator distinct_indices(int64_t n);
// Uniform [lo, hi] values with -inf wherever i0 > n_past + i1 (a causal attention mask).
Generator causal_mask(float lo, float hi, int n_past);

// --- cases ---------------------------------------------------------------------------------------

// A leaf of a case's graph and how to fill it.
struct InputSpec {
    xb::Tensor* tensor;
    Generator generate;
};

// Handed to a case's build function: the context and the inputs declared so far.
class CaseBuilder {
public:
    explicit CaseBuilder(xb::Context& ctx) : ctx_(&ctx) {}
    xb::Context& ctx() const { return *ctx_; }
    // A new contiguous input of `type`; the reference sees it as in[i], in declaration order.
    xb::Tensor* input(xb::DType type, Shape ne, Generator generate = uniform(-1.0f, 1.0f));
    const std::vector<InputSpec>& inputs() const { return inputs_; }

private:
    xb::Context* ctx_;
    std::vector<InputSpec> inputs_;
};

using BuildFn = std::function<xb::Tensor*(CaseBuilder& b)>;
// in[i] holds input i as stored (integers exactly, floats after rounding to their type).
using RefFn = std::function<RefArray(const std::vector<RefArray>& in)>;

struct OpCase {
    std::string name;  // unique within its family; letters, digits and '_'
    BuildFn build;
    RefFn reference;
    double tolerance;  // largest NMSE accepted
};
void PrintTo(const OpCase& c, std::ostream* os);

// --- tolerances (NMSE = sum((out - ref)^2) / sum(ref^2)) ------------------------------------------
// Unit roundoffs: f32 2^-24 = 6.0e-8, f16 2^-11 = 4.9e-4, bf16 2^-8 = 3.9e-3. One rounding of every
// element gives an NMSE of at most u^2 (about u^2/3 on average).

// Pure data movement (copies, views, gathers, padding, argmax indices): the output is the stored
// input, bit for bit.
inline constexpr double kTolExact = 0.0;
// f32 results of a few f32 operations each (element-wise math, libm-quality exp/tanh/log): a few
// ulp per element, NMSE ~1e-14; 1e-12 leaves room for fast exp/tanh approximations only.
inline constexpr double kTolF32 = 1e-12;
// f32 results of rows reduced in f32 (sums, norms, softmax over up to ~100 elements): errors grow
// with sqrt(n) ulp, NMSE ~1e-13; 1e-10 also admits pairwise or blocked summation orders.
inline constexpr double kTolF32Reduce = 1e-10;
// Results stored as f16: one rounding gives at most u_f16^2 = 2.4e-7; 1e-6 allows for one more
// rounding inside the kernel (an f16 intermediate), no more.
inline constexpr double kTolF16 = 1e-6;
// Results stored as bf16: u_bf16^2 = 1.5e-5 for one rounding; 6e-5 allows for one more.
inline constexpr double kTolBF16 = 6e-5;
// The tolerance of results stored as `type` after f32-accurate computation.
double tolerance_for_output(xb::DType type);

// --- the harness ---------------------------------------------------------------------------------

// The names of every device in xb::Registry::global().
std::vector<std::string> device_names();

// What one run of a case produced.
struct CaseRun {
    std::string unsupported;  // non-empty: the backend does not support a node (why)
    xb::Status status;        // the first failure of building, allocating, setting or computing
    RefArray out;             // the backend's output, in logical order
    RefArray ref;             // the reference output
};
CaseRun run_case(const OpCase& c, xb::Backend& backend);

// NMSE of out against ref over the positions where ref is finite (absolute when ref is all zeros).
double nmse(const RefArray& out, const RefArray& ref);
// Same shapes; non-finite values exactly where the reference has them (and equal there); NMSE within
// the tolerance.
testing::AssertionResult matches_reference(const RefArray& out, const RefArray& ref, double tolerance);

// Parameterised over (device name, case); instantiate with XB_OP_CASES.
using OpParam = std::tuple<std::string, OpCase>;
class OpTest : public testing::TestWithParam<OpParam> {};
std::string op_param_name(const testing::TestParamInfo<OpParam>& info);
// `s` with every character that gtest does not allow in a test name replaced by '_'.
std::string test_name(std::string s);

// The case lists of each family (test_ops_<family>.cpp), also used by the multi-threaded test.
std::vector<OpCase> elementwise_cases();
std::vector<OpCase> layout_cases();
std::vector<OpCase> reduce_cases();
std::vector<OpCase> attention_cases();
std::vector<OpCase> matmul_cases();

// "f32": the type's part of case names.
std::string type_tag(xb::DType t);

}  // namespace xbt

// Runs every case of `cases` on every registered device, as <family>/OpTest.Matches/<device>_<case>.
#define XB_OP_CASES(family, cases)                                                                                 \
    INSTANTIATE_TEST_SUITE_P(family, OpTest,                                                                       \
                             testing::Combine(testing::ValuesIn(::xbt::device_names()), testing::ValuesIn(cases)), \
                             ::xbt::op_param_name)
