// The GPU's forms of the sigmoid family (op_math.hpp's fast_*: a reciprocal for the division,
// GELU's tanh as a sigmoid) computed here with expf, against float64: the rewriting alone costs at
// most a few ulp. The device's exp intrinsic adds its documented error on a GPU
// (CudaDeviceTest.FastActivationsStayWithinTheirUlpBound measures it there).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "core/op_math.hpp"

namespace xb {
namespace {

// The ops' definitions in float64, with the ops' own f32 constants (1.702f differs from 1.702 by
// 3e-8, which exp turns into 23 ulp at x = -30). GELU as x * sigmoid(2y), not 0.5 x (1 + tanh(y)):
// the same function, but 1 + tanh(y) cancels to nothing for y < -10 even in float64.
double silu_ref(double x) { return x / (1.0 + std::exp(-x)); }
double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double gelu_quick_ref(double x) { return x / (1.0 + std::exp(-static_cast<double>(1.702f) * x)); }
double gelu_ref(double x) {
    const double c = static_cast<double>(0.79788456080286535587989211986876f);
    const double y = c * x * (1.0 + static_cast<double>(0.044715f) * x * x);
    return x / (1.0 + std::exp(-2.0 * y));
}

// |got - want| in units of the float spacing at want.
double ulps(float got, double want) {
    const float w = static_cast<float>(want);
    const float spacing = std::nextafter(std::fabs(w), std::numeric_limits<float>::infinity()) - std::fabs(w);
    return std::fabs(static_cast<double>(got) - want) / static_cast<double>(spacing);
}

// The exp argument t of each form, and how many ulp of t's own f32 rounding (the f32 definitions
// have it too) can cost at the result: about |t| times the roundings in t over two.
struct Form {
    const char* name;
    std::function<float(float)> fast;
    std::function<double(double)> ref;
    double lo, hi;          // where the result stays a normal float
    double (*arg)(double);  // t
    double amplification;   // ulp per unit of |t|
};

TEST(FastActivations, TheirFormsStayWithinAFewUlpOfFloat64) {
    const Form forms[] = {
        {"silu", fast_silu_f32, silu_ref, -30, 30, [](double x) { return -x; }, 0.0},
        {"sigmoid", fast_sigmoid_f32, sigmoid_ref, -30, 30, [](double x) { return -x; }, 0.0},
        {"gelu_quick", fast_gelu_quick_f32, gelu_quick_ref, -30, 30, [](double x) { return -1.702 * x; }, 1.0},
        {"gelu", fast_gelu_f32, gelu_ref, -9, 9,
         [](double x) { return -2.0 * 0.79788456 * x * (1.0 + 0.044715 * x * x); }, 3.0},
    };
    constexpr double kBase = 4.0;  // the division, the sum, the product and expf's own ulp
    for (const Form& f : forms) {
        double worst = 0.0, at = 0.0;
        for (int i = 0; i <= 200000; ++i) {
            const double x = f.lo + (f.hi - f.lo) * i / 200000.0;
            const float xf = static_cast<float>(x);
            const double u = ulps(f.fast(xf), f.ref(static_cast<double>(xf)));
            const double bound = kBase + f.amplification * std::fabs(f.arg(xf));
            ASSERT_LE(u, bound) << f.name << " at x = " << xf;
            if (u > worst) {
                worst = u;
                at = xf;
            }
        }
        RecordProperty(std::string(f.name) + "_max_ulp", std::to_string(worst) + " at " + std::to_string(at));
    }
}

// Near zero and at the ends the forms give what the exact ones give: 0, the identity's slope, 0 or
// x for large |x|, NaN for NaN.
TEST(FastActivations, EdgesAgreeWithTheExactForms) {
    for (float x : {0.0f, -0.0f, 1e-30f, -1e-30f, 80.0f, -80.0f, 1e30f, -1e30f}) {
        EXPECT_NEAR(fast_silu_f32(x), silu_f32(x), 1e-6f * std::fabs(silu_f32(x)) + 1e-38f) << x;
        EXPECT_NEAR(fast_gelu_f32(x), gelu_f32(x), 1e-6f * std::fabs(gelu_f32(x)) + 1e-38f) << x;
        EXPECT_NEAR(fast_sigmoid_f32(x), sigmoid_f32(x), 1e-6f) << x;
    }
    EXPECT_TRUE(std::isnan(fast_silu_f32(NAN)));
    EXPECT_TRUE(std::isnan(fast_gelu_f32(NAN)));
    EXPECT_EQ(fast_unary_f32(UnaryOp::Relu, -2.0f), 0.0f);  // the rest are the exact forms
    EXPECT_EQ(fast_unary_f32(UnaryOp::Tanh, 0.5f), std::tanh(0.5f));
    EXPECT_EQ(fast_glu_activation_f32(GluOp::SwiGlu, 1.5f), fast_silu_f32(1.5f));
    EXPECT_EQ(fast_glu_activation_f32(GluOp::GeGlu, 1.5f), fast_gelu_f32(1.5f));
}

}  // namespace
}  // namespace xb
