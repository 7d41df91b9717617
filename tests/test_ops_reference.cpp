// The float64 reference of every op (see op_test_util.hpp), written from the op definitions in
// core/ops.hpp, plus a few self-checks of the reference on hand-checkable inputs.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "op_test_util.hpp"

namespace xbt {

int64_t element_count(const Shape& ne) { return ne[0] * ne[1] * ne[2] * ne[3]; }

RefArray::RefArray(Shape ne, double value) : ne_(ne), v_(static_cast<size_t>(element_count(ne)), value) {}

RefArray::RefArray(Shape ne, std::vector<double> values) : ne_(ne), v_(std::move(values)) {
    if (static_cast<int64_t>(v_.size()) != element_count(ne)) {
        ADD_FAILURE() << "RefArray: " << v_.size() << " values for " << element_count(ne) << " elements";
        v_.resize(static_cast<size_t>(element_count(ne)));
    }
}

namespace ref {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// softmax of v in place, over the finite maximum; entries of -inf become 0.
void softmax_in_place(std::vector<double>& v) {
    const double max = *std::max_element(v.begin(), v.end());
    double total = 0.0;
    for (double& x : v) {
        x = std::exp(x - max);
        total += x;
    }
    for (double& x : v) x /= total;
}

}  // namespace

// --- element-wise --------------------------------------------------------------------------------

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

double unary(xb::UnaryOp op, double x) {
    switch (op) {
        case xb::UnaryOp::Neg: return -x;
        case xb::UnaryOp::Relu: return std::max(x, 0.0);
        case xb::UnaryOp::Gelu: return gelu(x);
        case xb::UnaryOp::GeluQuick: return gelu_quick(x);
        case xb::UnaryOp::Silu: return silu(x);
        case xb::UnaryOp::Tanh: return std::tanh(x);
        case xb::UnaryOp::Sigmoid: return sigmoid(x);
        case xb::UnaryOp::Exp: return std::exp(x);
    }
    ADD_FAILURE() << "unknown unary op";
    return 0.0;
}

double glu_activation(xb::GluOp op, double x) { return op == xb::GluOp::SwiGlu ? silu(x) : gelu(x); }

RefArray glu(const RefArray& a, xb::GluOp op, bool swapped) {
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

RefArray glu_split(const RefArray& a, const RefArray& b, xb::GluOp op) {
    RefArray out(a.ne());
    for (int64_t i = 0; i < a.size(); ++i) out[i] = glu_activation(op, a[i]) * b[i];
    return out;
}

// --- layout and copies ---------------------------------------------------------------------------

RefArray reshape(const RefArray& a, Shape ne) {
    if (element_count(ne) != a.size()) ADD_FAILURE() << "ref::reshape: element counts differ";
    return RefArray(ne, a.values());
}

RefArray permute(const RefArray& a, std::array<int, 4> axes) {
    Shape ne{};
    for (int i = 0; i < 4; ++i) ne[static_cast<size_t>(axes[static_cast<size_t>(i)])] = a.ne()[static_cast<size_t>(i)];
    RefArray out(ne);
    for_each_index(a.ne(), [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        const std::array<int64_t, 4> src{i0, i1, i2, i3};
        std::array<int64_t, 4> dst{};
        for (size_t i = 0; i < 4; ++i) dst[static_cast<size_t>(axes[i])] = src[i];
        out.at(dst[0], dst[1], dst[2], dst[3]) = a.at(i0, i1, i2, i3);
    });
    return out;
}

RefArray transpose(const RefArray& a) { return permute(a, {1, 0, 2, 3}); }

RefArray strided_view(const RefArray& storage, Shape ne, std::array<int64_t, 4> strides, int64_t offset) {
    RefArray out(ne);
    for_each_index(ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        out.at(i0, i1, i2, i3) =
            storage[offset + i0 * strides[0] + i1 * strides[1] + i2 * strides[2] + i3 * strides[3]];
    });
    return out;
}

RefArray repeat(const RefArray& a, Shape ne) {
    const Shape& na = a.ne();
    RefArray out(ne);
    for_each_index(ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        out.at(i0, i1, i2, i3) = a.at(i0 % na[0], i1 % na[1], i2 % na[2], i3 % na[3]);
    });
    return out;
}

RefArray concat(const RefArray& a, const RefArray& b, int dim) {
    const auto d = static_cast<size_t>(dim);
    Shape ne = a.ne();
    ne[d] += b.ne()[d];
    RefArray out(ne);
    for_each_index(ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        std::array<int64_t, 4> i{i0, i1, i2, i3};
        const bool from_a = i[d] < a.ne()[d];
        if (!from_a) i[d] -= a.ne()[d];
        out.at(i0, i1, i2, i3) = from_a ? a.at(i[0], i[1], i[2], i[3]) : b.at(i[0], i[1], i[2], i[3]);
    });
    return out;
}

RefArray pad(const RefArray& a, std::array<int, 4> after) {
    Shape ne = a.ne();
    for (size_t i = 0; i < 4; ++i) ne[i] += after[i];
    RefArray out(ne);
    for_each_index(
        a.ne(), [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) { out.at(i0, i1, i2, i3) = a.at(i0, i1, i2, i3); });
    return out;
}

RefArray arange(double start, double stop, double step) {
    const auto n = static_cast<int64_t>(std::ceil((stop - start) / step));
    RefArray out({n, 1, 1, 1});
    for (int64_t i = 0; i < n; ++i) out[i] = start + static_cast<double>(i) * step;
    return out;
}

// out[:, j, i2, i3] = a[:, rows[j, i2, i3], i2, i3]
RefArray get_rows(const RefArray& a, const RefArray& rows) {
    const Shape ne{a.ne()[0], rows.ne()[0], rows.ne()[1], rows.ne()[2]};
    RefArray out(ne);
    for_each_index(ne, [&](int64_t i0, int64_t j, int64_t i2, int64_t i3) {
        const auto r = static_cast<int64_t>(rows.at(j, i2, i3));
        out.at(i0, j, i2, i3) = a.at(i0, r, i2, i3);
    });
    return out;
}

// dst[:, rows[j, i2 % r2, i3 % r3], i2, i3] = src[:, j, i2, i3]; other rows of dst are kept.
RefArray set_rows(const RefArray& dst, const RefArray& src, const RefArray& rows) {
    RefArray out = dst;
    for_each_index(src.ne(), [&](int64_t i0, int64_t j, int64_t i2, int64_t i3) {
        const auto r = static_cast<int64_t>(rows.at(j, i2 % rows.ne()[1], i3 % rows.ne()[2]));
        out.at(i0, r, i2, i3) = src.at(i0, j, i2, i3);
    });
    return out;
}

// --- reductions and normalisation ----------------------------------------------------------------

namespace {

// fn(row values) -> one value, for every row of a: result [1, ne1, ne2, ne3].
RefArray reduce_rows(const RefArray& a, const std::function<double(const std::vector<double>&)>& fn) {
    const Shape& ne = a.ne();
    RefArray out({1, ne[1], ne[2], ne[3]});
    std::vector<double> row(static_cast<size_t>(ne[0]));
    for_each_index({1, ne[1], ne[2], ne[3]}, [&](int64_t, int64_t i1, int64_t i2, int64_t i3) {
        for (int64_t i0 = 0; i0 < ne[0]; ++i0) row[static_cast<size_t>(i0)] = a.at(i0, i1, i2, i3);
        out.at(0, i1, i2, i3) = fn(row);
    });
    return out;
}

// fn(row values) -> transformed row, for every row of a.
RefArray transform_rows(const RefArray& a,
                        const std::function<void(std::vector<double>&, int64_t i1, int64_t i2, int64_t i3)>& fn) {
    const Shape& ne = a.ne();
    RefArray out(ne);
    std::vector<double> row(static_cast<size_t>(ne[0]));
    for_each_index({1, ne[1], ne[2], ne[3]}, [&](int64_t, int64_t i1, int64_t i2, int64_t i3) {
        for (int64_t i0 = 0; i0 < ne[0]; ++i0) row[static_cast<size_t>(i0)] = a.at(i0, i1, i2, i3);
        fn(row, i1, i2, i3);
        for (int64_t i0 = 0; i0 < ne[0]; ++i0) out.at(i0, i1, i2, i3) = row[static_cast<size_t>(i0)];
    });
    return out;
}

double row_sum(const std::vector<double>& row) {
    double s = 0.0;
    for (double x : row) s += x;
    return s;
}

}  // namespace

RefArray sum(const RefArray& a) { return RefArray({1, 1, 1, 1}, {row_sum(a.values())}); }

RefArray sum_rows(const RefArray& a) { return reduce_rows(a, row_sum); }

RefArray mean(const RefArray& a) {
    return reduce_rows(a,
                       [](const std::vector<double>& row) { return row_sum(row) / static_cast<double>(row.size()); });
}

RefArray argmax(const RefArray& a) {
    const RefArray best = reduce_rows(a, [](const std::vector<double>& row) {
        return static_cast<double>(std::max_element(row.begin(), row.end()) - row.begin());
    });
    return reshape(best, {a.ne()[1], 1, 1, 1});
}

RefArray norm(const RefArray& a, double eps) {
    return transform_rows(a, [eps](std::vector<double>& row, int64_t, int64_t, int64_t) {
        const double n = static_cast<double>(row.size());
        const double mu = row_sum(row) / n;
        double var = 0.0;
        for (double x : row) var += (x - mu) * (x - mu);
        const double inv = 1.0 / std::sqrt(var / n + eps);
        for (double& x : row) x = (x - mu) * inv;
    });
}

RefArray rms_norm(const RefArray& a, double eps) {
    return transform_rows(a, [eps](std::vector<double>& row, int64_t, int64_t, int64_t) {
        double sq = 0.0;
        for (double x : row) sq += x * x;
        const double inv = 1.0 / std::sqrt(sq / static_cast<double>(row.size()) + eps);
        for (double& x : row) x *= inv;
    });
}

// --- attention -----------------------------------------------------------------------------------

double alibi_slope(int h, int n_head, double max_bias) {
    if (max_bias <= 0.0) return 1.0;
    int n_head_log2 = 1;
    while (n_head_log2 * 2 <= n_head) n_head_log2 *= 2;
    const double m0 = std::pow(2.0, -max_bias / n_head_log2);
    const double m1 = std::pow(2.0, -max_bias / 2.0 / n_head_log2);
    return h < n_head_log2 ? std::pow(m0, h + 1) : std::pow(m1, 2 * (h - n_head_log2) + 1);
}

RefArray soft_max(const RefArray& a, const RefArray* mask, double scale, double max_bias) {
    const int n_head = static_cast<int>(a.ne()[2]);
    return transform_rows(a, [&](std::vector<double>& row, int64_t i1, int64_t i2, int64_t i3) {
        const double slope = alibi_slope(static_cast<int>(i2), n_head, max_bias);
        for (size_t i0 = 0; i0 < row.size(); ++i0) {
            row[i0] *= scale;
            if (mask != nullptr) {
                const Shape& m = mask->ne();
                row[i0] += slope * mask->at(static_cast<int64_t>(i0), i1, i2 % m[2], i3 % m[3]);
            }
        }
        softmax_in_place(row);
    });
}

RefArray diag_mask_inf(const RefArray& a, int n_past) {
    RefArray out = a;
    for_each_index(a.ne(), [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        if (i0 > n_past + i1) out.at(i0, i1, i2, i3) = -kInf;
    });
    return out;
}

namespace {

struct Rotation {
    double cos;
    double sin;
};

// YaRN: the dim (in pairs) at which n_rot rotations fit the original context.
double yarn_corr_dim(int n_dims, int n_ctx_orig, double n_rot, double base) {
    return n_dims * std::log(n_ctx_orig / (n_rot * 2.0 * std::numbers::pi)) / (2.0 * std::log(base));
}

// The rotation of pair k (dims 2k, 2k+1 in normal mode) of a token at position pos.
Rotation rope_rotation(const xb::RopeParams& p, double pos, int64_t k) {
    const double theta_extrap =
        pos * std::pow(static_cast<double>(p.freq_base), -2.0 * static_cast<double>(k) / p.n_dims);
    const double theta_interp = p.freq_scale * theta_extrap;
    double theta = theta_interp;
    double mscale = p.attn_factor;
    if (p.ext_factor != 0.0f) {
        const double lo = std::max(0.0, std::floor(yarn_corr_dim(p.n_dims, p.n_ctx_orig, p.beta_fast, p.freq_base)));
        const double hi =
            std::min(p.n_dims - 1.0, std::ceil(yarn_corr_dim(p.n_dims, p.n_ctx_orig, p.beta_slow, p.freq_base)));
        const double y = (static_cast<double>(k) - lo) / std::max(0.001, hi - lo);
        const double ramp = 1.0 - std::clamp(y, 0.0, 1.0);
        theta = theta_interp * (1.0 - ramp * p.ext_factor) + theta_extrap * ramp * p.ext_factor;
        mscale *= 1.0 + 0.1 * std::log(1.0 / p.freq_scale);
    }
    return {std::cos(theta) * mscale, std::sin(theta) * mscale};
}

}  // namespace

RefArray rope(const RefArray& a, const RefArray& positions, const xb::RopeParams& p) {
    const int64_t half = p.n_dims / 2;
    const bool neox = p.mode == xb::RopeMode::Neox;
    return transform_rows(a, [&](std::vector<double>& row, int64_t, int64_t i2, int64_t) {
        const double pos = positions[i2];
        for (int64_t k = 0; k < half; ++k) {
            const auto first = static_cast<size_t>(neox ? k : 2 * k);
            const auto second = static_cast<size_t>(neox ? k + half : 2 * k + 1);
            const Rotation r = rope_rotation(p, pos, k);
            const double x0 = row[first];
            const double x1 = row[second];
            row[first] = x0 * r.cos - x1 * r.sin;
            row[second] = x0 * r.sin + x1 * r.cos;
        }
    });
}

// out[:, h, iq, s] = sum_j softmax_j(cap(scale q.k_j) + slope_h mask[j, iq]) v_j, with the kv head of
// q head h being h / (n_head / n_head_kv).
RefArray flash_attn_ext(const RefArray& q, const RefArray& k, const RefArray& v, const RefArray* mask, double scale,
                        double max_bias, double softcap) {
    const int64_t d = q.ne()[0], n_q = q.ne()[1], n_head = q.ne()[2], n_seq = q.ne()[3];
    const int64_t n_kv = k.ne()[1], dv = v.ne()[0];
    const int64_t group = n_head / k.ne()[2];
    RefArray out({dv, n_head, n_q, n_seq});
    std::vector<double> s(static_cast<size_t>(n_kv));
    for_each_index({1, n_q, n_head, n_seq}, [&](int64_t, int64_t iq, int64_t h, int64_t is) {
        const int64_t hk = h / group;
        const double slope = alibi_slope(static_cast<int>(h), static_cast<int>(n_head), max_bias);
        for (int64_t j = 0; j < n_kv; ++j) {
            double dot = 0.0;
            for (int64_t c = 0; c < d; ++c) dot += q.at(c, iq, h, is) * k.at(c, j, hk, is);
            double score = dot * scale;
            if (softcap > 0.0) score = softcap * std::tanh(score / softcap);
            if (mask != nullptr) {
                const Shape& m = mask->ne();
                score += slope * mask->at(j, iq, h % m[2], is % m[3]);
            }
            s[static_cast<size_t>(j)] = score;
        }
        softmax_in_place(s);
        for (int64_t c = 0; c < dv; ++c) {
            double acc = 0.0;
            for (int64_t j = 0; j < n_kv; ++j) acc += s[static_cast<size_t>(j)] * v.at(c, j, hk, is);
            out.at(c, h, iq, is) = acc;
        }
    });
    return out;
}

// --- matrix products -----------------------------------------------------------------------------

// out[i, j, i2, i3] = sum_l a[l, i, i2 / (b2 / a2), i3 / (b3 / a3)] * b[l, j, i2, i3]
RefArray mul_mat(const RefArray& a, const RefArray& b) {
    const Shape& na = a.ne();
    const Shape& nb = b.ne();
    const int64_t r2 = nb[2] / na[2], r3 = nb[3] / na[3];
    RefArray out({na[1], nb[1], nb[2], nb[3]});
    for_each_index(out.ne(), [&](int64_t i, int64_t j, int64_t i2, int64_t i3) {
        double acc = 0.0;
        for (int64_t l = 0; l < na[0]; ++l) acc += a.at(l, i, i2 / r2, i3 / r3) * b.at(l, j, i2, i3);
        out.at(i, j, i2, i3) = acc;
    });
    return out;
}

// out[i, j, i2, i3] = sum_l a[i, l, i2 / (b2 / a2), i3 / (b3 / a3)] * b[j, l, i2, i3]
RefArray out_prod(const RefArray& a, const RefArray& b) {
    const Shape& na = a.ne();
    const Shape& nb = b.ne();
    const int64_t r2 = nb[2] / na[2], r3 = nb[3] / na[3];
    RefArray out({na[0], nb[0], nb[2], nb[3]});
    for_each_index(out.ne(), [&](int64_t i, int64_t j, int64_t i2, int64_t i3) {
        double acc = 0.0;
        for (int64_t l = 0; l < na[1]; ++l) acc += a.at(i, l, i2 / r2, i3 / r3) * b.at(j, l, i2, i3);
        out.at(i, j, i2, i3) = acc;
    });
    return out;
}

}  // namespace ref

// --- self-checks of the reference on inputs whose results are known in closed form ---------------

namespace {

TEST(OpReference, PermuteMovesDimIToAxesI) {
    RefArray a({2, 3, 4, 1});
    for (int64_t i = 0; i < a.size(); ++i) a[i] = static_cast<double>(i);
    const RefArray p = ref::permute(a, {2, 0, 1, 3});
    EXPECT_EQ(p.ne(), (Shape{3, 4, 2, 1}));
    for_each_index(a.ne(),
                   [&](int64_t i0, int64_t i1, int64_t i2, int64_t) { EXPECT_EQ(p.at(i1, i2, i0), a.at(i0, i1, i2)); });
}

TEST(OpReference, SoftMaxRowsSumToOneAndKeepOrder) {
    RefArray a({5, 3, 1, 1});
    for (int64_t i = 0; i < a.size(); ++i) a[i] = std::sin(static_cast<double>(i));
    const RefArray s = ref::soft_max(a, nullptr, 1.0, 0.0);
    for (int64_t r = 0; r < 3; ++r) {
        double total = 0.0;
        for (int64_t c = 0; c < 5; ++c) total += s.at(c, r);
        EXPECT_NEAR(total, 1.0, 1e-15);
        EXPECT_EQ(s.at(0, r) < s.at(1, r), a.at(0, r) < a.at(1, r));
    }
}

TEST(OpReference, AlibiSlopesFollowTheTwoGeometricSeries) {
    // 6 heads: n_head_log2 = 4, m0 = 2^-2, m1 = 2^-1 for max_bias 8.
    EXPECT_DOUBLE_EQ(ref::alibi_slope(0, 6, 8.0), 0.25);
    EXPECT_DOUBLE_EQ(ref::alibi_slope(3, 6, 8.0), std::pow(0.25, 4));
    EXPECT_DOUBLE_EQ(ref::alibi_slope(4, 6, 8.0), 0.5);
    EXPECT_DOUBLE_EQ(ref::alibi_slope(5, 6, 8.0), std::pow(0.5, 3));
    EXPECT_DOUBLE_EQ(ref::alibi_slope(2, 6, 0.0), 1.0);
}

TEST(OpReference, RopeRotationPreservesPairNorms) {
    RefArray a({8, 1, 2, 1});
    for (int64_t i = 0; i < a.size(); ++i) a[i] = 0.1 * static_cast<double>(i + 1);
    const RefArray pos({2, 1, 1, 1}, {3.0, 17.0});
    xb::RopeParams p;
    p.n_dims = 6;
    const RefArray r = ref::rope(a, pos, p);
    for (int64_t t = 0; t < 2; ++t) {
        for (int64_t k = 0; k < 3; ++k) {
            const double before = std::hypot(a.at(2 * k, 0, t), a.at(2 * k + 1, 0, t));
            EXPECT_NEAR(std::hypot(r.at(2 * k, 0, t), r.at(2 * k + 1, 0, t)), before, 1e-14);
        }
        EXPECT_EQ(r.at(6, 0, t), a.at(6, 0, t));  // past n_dims: untouched
        EXPECT_EQ(r.at(7, 0, t), a.at(7, 0, t));
    }
}

TEST(OpReference, MulMatIsRowDotProducts) {
    const RefArray a({2, 2, 1, 1}, {1, 2, 3, 4});  // rows (1, 2) and (3, 4)
    const RefArray b({2, 1, 1, 1}, {5, 6});
    const RefArray c = ref::mul_mat(a, b);
    EXPECT_EQ(c.ne(), (Shape{2, 1, 1, 1}));
    EXPECT_EQ(c[0], 1 * 5 + 2 * 6);
    EXPECT_EQ(c[1], 3 * 5 + 4 * 6);
}

}  // namespace

}  // namespace xbt
