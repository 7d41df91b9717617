// In exact arithmetic: the element-wise ops and activations.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "exact/ops.hpp"

namespace xb::exact {

RefArray map(const RefArray& a, const std::function<double(double)>& f) {
    RefArray out(a.ne());
    for (int64_t i = 0; i < a.size(); ++i) out[i] = f(a[i]);
    return out;
}

RefArray binary(const RefArray& a, const RefArray& b, const std::function<double(double, double)>& f) {
    const Shape& nb = b.ne();
    RefArray out(a.ne());
    for_each_index(a.ne(), [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        out.at(i0, i1, i2, i3) = f(a.at(i0, i1, i2, i3), b.at(i0 % nb[0], i1 % nb[1], i2 % nb[2], i3 % nb[3]));
    });
    return out;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double silu(double x) { return x * sigmoid(x); }
double gelu_quick(double x) { return x * sigmoid(1.702 * x); }
double gelu(double x) {
    const double c = std::sqrt(2.0 / std::numbers::pi);
    return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
}

double softplus(double x) { return x > 0.0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

double unary(UnaryOp op, double x) {
    switch (op) {
        case UnaryOp::Neg: return -x;
        case UnaryOp::Relu: return std::max(x, 0.0);
        case UnaryOp::Gelu: return gelu(x);
        case UnaryOp::GeluQuick: return gelu_quick(x);
        case UnaryOp::Silu: return silu(x);
        case UnaryOp::Tanh: return std::tanh(x);
        case UnaryOp::Sigmoid: return sigmoid(x);
        case UnaryOp::Exp: return std::exp(x);
        case UnaryOp::Softplus: return softplus(x);
    }
    // An op added to UnaryOp without a reference: NaN makes every case of it fail loudly.
    return std::numeric_limits<double>::quiet_NaN();
}

double glu_activation(GluOp op, double x) { return op == GluOp::SwiGlu ? silu(x) : gelu(x); }

RefArray glu(const RefArray& a, GluOp op, bool swapped) {
    const int64_t half = a.ne()[0] / 2;
    Shape ne = a.ne();
    ne[0] = half;
    RefArray out(ne);
    for_each_index(ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        const double first = a.at(i0, i1, i2, i3);
        const double second = a.at(i0 + half, i1, i2, i3);
        out.at(i0, i1, i2, i3) = swapped ? glu_activation(op, second) * first : glu_activation(op, first) * second;
    });
    return out;
}

RefArray glu_split(const RefArray& a, const RefArray& b, GluOp op) {
    RefArray out(a.ne());
    for (int64_t i = 0; i < a.size(); ++i) out[i] = glu_activation(op, a[i]) * b[i];
    return out;
}

RefArray swiglu_oai(const RefArray& a, const RefArray& b, double alpha, double limit) {
    RefArray out(a.ne());
    for (int64_t i = 0; i < a.size(); ++i) {
        const double x = std::min(a[i], limit);
        const double g = std::clamp(b[i], -limit, limit);
        out[i] = x * sigmoid(alpha * x) * (g + 1.0);
    }
    return out;
}

}  // namespace xb::exact
