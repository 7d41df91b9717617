// The recurrent layers' ops in float64 (core/ops.hpp defines them): each recurrence runs token by
// token from its state, in double, exactly as written.
#include <cmath>
#include <vector>

#include "exact/ops.hpp"

namespace xb::exact {

RefArray ssm_conv(const RefArray& sx, const RefArray& c) {
    const int64_t d_conv = c.ne()[0], d_inner = c.ne()[1], n_t = sx.ne()[0] - d_conv + 1, n_s = sx.ne()[2];
    RefArray out({d_inner, n_t, n_s, 1});
    for_each_index(out.ne(), [&](int64_t i, int64_t t, int64_t s, int64_t) {
        double sum = 0.0;
        for (int64_t j = 0; j < d_conv; ++j) sum += sx.at(t + j, i, s) * c.at(j, i);
        out.at(i, t, s) = sum;
    });
    return out;
}

RefArray ssm_scan(const RefArray& s0, const RefArray& x, const RefArray& dt, const RefArray& A, const RefArray& B,
                  const RefArray& C, const RefArray& ids) {
    const int64_t d_state = s0.ne()[0], head_dim = x.ne()[0], n_head = x.ne()[1], n_t = x.ne()[2], n_s = x.ne()[3];
    const int64_t heads_per_group = n_head / B.ne()[1];
    const bool per_state_decay = A.ne()[0] != 1;  // Mamba-1
    const int64_t y_size = x.size(), state_size = d_state * head_dim * n_head;
    RefArray out({y_size + state_size * n_s, 1, 1, 1});
    std::vector<double> state(static_cast<size_t>(d_state));
    for (int64_t s = 0; s < n_s; ++s) {
        const auto id = static_cast<int64_t>(ids[s]);
        for (int64_t h = 0; h < n_head; ++h) {
            const int64_t g = h / heads_per_group;
            for (int64_t i = 0; i < head_dim; ++i) {
                for (int64_t n = 0; n < d_state; ++n) state[static_cast<size_t>(n)] = s0.at(n, i, h, id);
                for (int64_t t = 0; t < n_t; ++t) {
                    const double step = softplus(dt.at(h, t, s));
                    double y = 0.0;
                    for (int64_t n = 0; n < d_state; ++n) {
                        const double decay = std::exp(step * A.at(per_state_decay ? n : 0, h));
                        double& st = state[static_cast<size_t>(n)];
                        st = st * decay + B.at(n, g, t, s) * x.at(i, h, t, s) * step;
                        y += st * C.at(n, g, t, s);
                    }
                    out[i + head_dim * (h + n_head * (t + n_t * s))] = y;
                }
                for (int64_t n = 0; n < d_state; ++n) {
                    out[y_size + s * state_size + n + d_state * (i + head_dim * h)] = state[static_cast<size_t>(n)];
                }
            }
        }
    }
    return out;
}

RefArray gated_delta_net(const RefArray& q, const RefArray& k, const RefArray& v, const RefArray& g, const RefArray& beta,
                         const RefArray& state) {
    const int64_t d = v.ne()[0], n_head = v.ne()[1], n_t = v.ne()[2], n_s = v.ne()[3];
    const int64_t qk_heads = q.ne()[1], seqs_per_qk = n_s / q.ne()[3];
    const bool gate_per_key = g.ne()[0] != 1;
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    const int64_t outputs = d * n_head * n_t * n_s;
    RefArray out({d * n_head, n_t * n_s + d * n_s, 1, 1});
    std::vector<double> S(static_cast<size_t>(d * d));  // S[i + j d]: key dim i, value dim j
    std::vector<double> delta(static_cast<size_t>(d));
    for (int64_t s = 0; s < n_s; ++s) {
        for (int64_t h = 0; h < n_head; ++h) {
            const int64_t hq = h % qk_heads, sq = s / seqs_per_qk;
            for (int64_t e = 0; e < d * d; ++e) S[static_cast<size_t>(e)] = state.at(e % d, e / d, h, s);
            for (int64_t t = 0; t < n_t; ++t) {
                for (int64_t i = 0; i < d; ++i) {
                    const double decay = std::exp(g.at(gate_per_key ? i : 0, h, t, s));
                    for (int64_t j = 0; j < d; ++j) S[static_cast<size_t>(i + j * d)] *= decay;
                }
                const double b = beta.at(0, h, t, s);
                for (int64_t j = 0; j < d; ++j) {
                    double kS = 0.0;
                    for (int64_t i = 0; i < d; ++i) kS += S[static_cast<size_t>(i + j * d)] * k.at(i, hq, t, sq);
                    delta[static_cast<size_t>(j)] = (v.at(j, h, t, s) - kS) * b;
                }
                for (int64_t j = 0; j < d; ++j) {
                    for (int64_t i = 0; i < d; ++i) S[static_cast<size_t>(i + j * d)] += k.at(i, hq, t, sq) * delta[static_cast<size_t>(j)];
                }
                for (int64_t j = 0; j < d; ++j) {
                    double o = 0.0;
                    for (int64_t i = 0; i < d; ++i) o += S[static_cast<size_t>(i + j * d)] * q.at(i, hq, t, sq);
                    out[j + d * (h + n_head * (t + n_t * s))] = o * scale;
                }
            }
            for (int64_t e = 0; e < d * d; ++e) out[outputs + e + d * d * (h + n_head * s)] = S[static_cast<size_t>(e)];
        }
    }
    return out;
}

}  // namespace xb::exact
