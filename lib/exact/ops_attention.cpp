// In exact arithmetic: the attention ops: soft_max_ext, diag_mask_inf, rope, flash_attn_ext.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "exact/ops.hpp"

namespace xb::exact {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// softmax of v in place, over the finite maximum; entries of -inf become 0. A sink (-inf: none) is
// one more logit of the normalisation, with no entry of its own.
void softmax_in_place(std::vector<double>& v, double sink = -kInf) {
    const double max = std::max(*std::max_element(v.begin(), v.end()), sink);
    double total = sink == -kInf ? 0.0 : std::exp(sink - max);
    for (double& x : v) {
        x = std::exp(x - max);
        total += x;
    }
    for (double& x : v) x /= total;
}

struct Rotation {
    double cos;
    double sin;
};

// YaRN: the dim (in pairs) at which n_rot rotations fit the original context.
double yarn_corr_dim(int n_dims, int n_ctx_orig, double n_rot, double base) {
    return n_dims * std::log(n_ctx_orig / (n_rot * 2.0 * std::numbers::pi)) / (2.0 * std::log(base));
}

// The rotation of pair k (dims 2k, 2k+1 in normal mode) of a token at position pos, its angle
// divided by `factor`.
Rotation rope_rotation(const RopeParams& p, double pos, int64_t k, double factor) {
    const double theta_extrap =
        pos * std::pow(static_cast<double>(p.freq_base), -2.0 * static_cast<double>(k) / p.n_dims) / factor;
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

double alibi_slope(int h, int n_head, double max_bias) {
    if (max_bias <= 0.0) return 1.0;
    int n_head_log2 = 1;
    while (n_head_log2 * 2 <= n_head) n_head_log2 *= 2;
    const double m0 = std::pow(2.0, -max_bias / n_head_log2);
    const double m1 = std::pow(2.0, -max_bias / 2.0 / n_head_log2);
    return h < n_head_log2 ? std::pow(m0, h + 1) : std::pow(m1, 2 * (h - n_head_log2) + 1);
}

RefArray soft_max(const RefArray& a, const RefArray* mask, double scale, double max_bias, const RefArray* sinks) {
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
        softmax_in_place(row, sinks != nullptr ? (*sinks)[i2] : -kInf);
    });
}

RefArray diag_mask_inf(const RefArray& a, int n_past) {
    RefArray out = a;
    for_each_index(a.ne(), [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        if (i0 > n_past + i1) out.at(i0, i1, i2, i3) = -kInf;
    });
    return out;
}

RefArray rope(const RefArray& a, const RefArray& positions, const RopeParams& p, const RefArray* freq_factors) {
    const int64_t half = p.n_dims / 2;
    const bool neox = p.mode == RopeMode::Neox;
    return transform_rows(a, [&](std::vector<double>& row, int64_t, int64_t i2, int64_t) {
        const double pos = positions[i2];
        for (int64_t k = 0; k < half; ++k) {
            const auto first = static_cast<size_t>(neox ? k : 2 * k);
            const auto second = static_cast<size_t>(neox ? k + half : 2 * k + 1);
            const Rotation r = rope_rotation(p, pos, k, freq_factors != nullptr ? (*freq_factors)[k] : 1.0);
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
                        double max_bias, double softcap, const RefArray* sinks) {
    const int64_t d = q.ne()[0], n_q = q.ne()[1], n_head = q.ne()[2], n_seq = q.ne()[3];
    const int64_t n_kv = k.ne()[1], dv = v.ne()[0];
    const int64_t group = n_head / k.ne()[2];
    RefArray out({dv, n_head, n_q, n_seq});
    const int64_t n_rows = n_q * n_head * n_seq;
#pragma omp parallel
    {
        std::vector<double> s(static_cast<size_t>(n_kv));
#pragma omp for schedule(dynamic, 4)
        for (int64_t r = 0; r < n_rows; ++r) {
            const int64_t iq = r % n_q, h = (r / n_q) % n_head, is = r / (n_q * n_head);
            const int64_t hk = h / group;
            const double slope = alibi_slope(static_cast<int>(h), static_cast<int>(n_head), max_bias);
            for (int64_t j = 0; j < n_kv; ++j) {
                // A masked key is not attended: its K and V rows are never read, so that NaN in them
                // (an unwritten cache cell) cannot reach the row. An unmasked NaN score makes the
                // whole row NaN, through the softmax's sum.
                const double mask_value = mask != nullptr ? mask->at(j, iq, h % mask->ne()[2], is % mask->ne()[3]) : 0.0;
                if (mask_value == -kInf) {
                    s[static_cast<size_t>(j)] = -kInf;
                    continue;
                }
                double dot = 0.0;
                for (int64_t c = 0; c < d; ++c) dot += q.at(c, iq, h, is) * k.at(c, j, hk, is);
                double score = dot * scale;
                if (softcap > 0.0) score = softcap * std::tanh(score / softcap);
                s[static_cast<size_t>(j)] = score + slope * mask_value;
            }
            softmax_in_place(s, sinks != nullptr ? (*sinks)[h] : -kInf);
            for (int64_t c = 0; c < dv; ++c) {
                double acc = 0.0;
                for (int64_t j = 0; j < n_kv; ++j) {
                    const double w = s[static_cast<size_t>(j)];
                    if (w != 0.0) acc += w * v.at(c, j, hk, is);  // a masked key's V row is not read
                }
                out.at(c, h, iq, is) = acc;
            }
        }
    }
    return out;
}

}  // namespace xb::exact
