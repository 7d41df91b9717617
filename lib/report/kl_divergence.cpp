#include "report/kl_divergence.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "report/timing.hpp"

namespace xb::report {

namespace {

constexpr double kKldPercents[] = {99.9, 99.0, 95.0, 90.0, 50.0, 10.0, 5.0, 1.0, 0.1};
constexpr double kDeltaPPercents[] = {99.9, 99.0, 95.0, 90.0, 75.0, 50.0, 25.0, 10.0, 5.0, 1.0, 0.1};

// The mean of `x` and its standard error.
ValueWithError mean_of(const std::vector<double>& x) {
    const auto n = static_cast<double>(x.size());
    double sum = 0, sum2 = 0;
    for (const double v : x) {
        sum += v;
        sum2 += v * v;
    }
    const double mean = sum / n;
    return {mean, x.size() > 1 ? std::sqrt(std::max(0.0, sum2 / n - mean * mean) / (n - 1)) : 0.0};
}

double correlation(const std::vector<double>& a, const std::vector<double>& b) {
    const double ma = mean_of(a).value, mb = mean_of(b).value;
    double cov = 0, va = 0, vb = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        cov += (a[i] - ma) * (b[i] - mb);
        va += (a[i] - ma) * (a[i] - ma);
        vb += (b[i] - mb) * (b[i] - mb);
    }
    return va > 0 && vb > 0 ? cov / std::sqrt(va * vb) : 1.0;
}

// One position's two distributions.
struct Position {
    double kld;
    double nll_base, nll_target;  // -log p(next token)
    bool same_top;
};

double log_sum_exp(const float* x, int64_t n) {
    const double top = *std::max_element(x, x + n);
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(x[i]) - top);
    return top + std::log(sum);
}

Position score(const float* base, const float* target, int64_t n_vocab, int32_t next) {
    const double lse_b = log_sum_exp(base, n_vocab), lse_t = log_sum_exp(target, n_vocab);
    double kld = 0;
    for (int64_t v = 0; v < n_vocab; ++v) {
        const double log_b = base[v] - lse_b, log_t = target[v] - lse_t;
        kld += std::exp(log_b) * (log_b - log_t);
    }
    const bool same = std::max_element(base, base + n_vocab) - base == std::max_element(target, target + n_vocab) - target;
    return {kld, lse_b - base[next], lse_t - target[next], same};
}

ValueWithError ppl_of(const std::vector<double>& nll) {
    const ValueWithError log_ppl = mean_of(nll);
    const double ppl = std::exp(log_ppl.value);
    return {ppl, ppl * log_ppl.uncertainty};
}

std::vector<std::pair<double, double>> percentiles(std::vector<double> values, std::span<const double> percents) {
    std::sort(values.begin(), values.end());
    std::vector<std::pair<double, double>> out;
    for (const double p : percents) out.emplace_back(p, percentile(values, p / 100.0));
    return out;
}

Status check_inputs(std::span<const float> base, std::span<const float> target, int64_t n_vocab,
                    std::span<const int32_t> tokens) {
    if (n_vocab < 1 || base.size() != target.size() || base.size() != tokens.size() * static_cast<size_t>(n_vocab)) {
        return Status(StatusCode::InvalidArgument, "kl_divergence: logits of " + std::to_string(base.size()) + " and " +
                                                       std::to_string(target.size()) + " values do not hold " +
                                                       std::to_string(tokens.size()) + " positions of " +
                                                       std::to_string(n_vocab) + " tokens each");
    }
    if (tokens.size() < 2) {
        return Status(StatusCode::InvalidArgument, "kl_divergence: a sequence of at least 2 tokens is needed (each "
                                                   "position is scored on the token after it)");
    }
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (tokens[i] < 0 || tokens[i] >= n_vocab) {
            return Status(StatusCode::InvalidArgument, "kl_divergence: token " + std::to_string(tokens[i]) + " at position " +
                                                           std::to_string(i) + " is outside the vocabulary of " +
                                                           std::to_string(n_vocab));
        }
    }
    for (const std::span<const float>& side : {base, target}) {
        const auto bad = std::find_if(side.begin(), side.end(), [](float v) { return !std::isfinite(v); });
        if (bad != side.end()) {
            return Status(StatusCode::InvalidArgument,
                          std::string("kl_divergence: the ") + (side.data() == base.data() ? "base" : "target") +
                              " logits hold a NaN or infinity (position " +
                              std::to_string((bad - side.begin()) / n_vocab) + ")");
        }
    }
    return Status::ok();
}

}  // namespace

Result<KldStatistics> kl_divergence(std::span<const float> base, std::span<const float> target, int64_t n_vocab,
                                    std::span<const int32_t> tokens) {
    XB_RETURN_IF_ERROR(check_inputs(base, target, n_vocab, tokens));
    const size_t n = tokens.size() - 1;
    std::vector<double> kld(n), nll_base(n), nll_target(n), ln_ratio(n), delta_p(n), delta_p2(n), same(n);
    for (size_t i = 0; i < n; ++i) {
        const size_t at = i * static_cast<size_t>(n_vocab);
        const Position p = score(&base[at], &target[at], n_vocab, tokens[i + 1]);
        kld[i] = p.kld;
        nll_base[i] = p.nll_base;
        nll_target[i] = p.nll_target;
        ln_ratio[i] = p.nll_target - p.nll_base;
        delta_p[i] = std::exp(-p.nll_target) - std::exp(-p.nll_base);
        delta_p2[i] = delta_p[i] * delta_p[i];
        same[i] = p.same_top ? 1.0 : 0.0;
    }
    KldStatistics s;
    s.positions = static_cast<int64_t>(n);
    s.vocabulary = n_vocab;
    s.ppl_base = ppl_of(nll_base);
    s.ppl_target = ppl_of(nll_target);
    s.ln_ppl_correlation = correlation(nll_base, nll_target);
    s.ln_ppl_ratio = mean_of(ln_ratio);
    const double ratio = std::exp(s.ln_ppl_ratio.value);
    s.ppl_ratio = {ratio, ratio * s.ln_ppl_ratio.uncertainty};
    const double ub = s.ppl_base.uncertainty, ut = s.ppl_target.uncertainty;
    s.ppl_difference = {s.ppl_target.value - s.ppl_base.value,
                        std::sqrt(std::max(0.0, ub * ub + ut * ut - 2.0 * s.ln_ppl_correlation * ub * ut))};
    s.kld_mean = mean_of(kld);
    s.kld_max = *std::max_element(kld.begin(), kld.end());
    s.kld_min = *std::min_element(kld.begin(), kld.end());
    s.kld_percentiles = percentiles(kld, kKldPercents);
    s.delta_p_mean = mean_of(delta_p);
    const ValueWithError mean_square = mean_of(delta_p2);
    const double rms = std::sqrt(mean_square.value);
    s.delta_p_rms = {rms, rms > 0 ? mean_square.uncertainty / (2.0 * rms) : 0.0};
    s.delta_p_max = *std::max_element(delta_p.begin(), delta_p.end());
    s.delta_p_min = *std::min_element(delta_p.begin(), delta_p.end());
    s.delta_p_percentiles = percentiles(delta_p, kDeltaPPercents);
    s.same_top = mean_of(same);
    return s;
}

namespace {

std::string percent_label(double p, const char* what) {
    char buf[48];
    if (p == 50.0) {
        std::snprintf(buf, sizeof buf, "Median %s", what);
    } else {
        std::snprintf(buf, sizeof buf, "%.1f%% %s", p, what);
    }
    return buf;
}

}  // namespace

Table kld_table(const KldStatistics& s) {
    Table t({"statistic", "value", "uncertainty"});
    const auto row = [&t](const std::string& name, double v, std::optional<double> u = std::nullopt) {
        t.add_row({name, v, u ? Cell(*u) : Cell(std::monostate{})});
    };
    row("Mean PPL(Q)", s.ppl_target.value, s.ppl_target.uncertainty);
    row("Mean PPL(base)", s.ppl_base.value, s.ppl_base.uncertainty);
    row("Cor(ln(PPL(Q)), ln(PPL(base))) %", 100.0 * s.ln_ppl_correlation);
    row("Mean ln(PPL(Q)/PPL(base))", s.ln_ppl_ratio.value, s.ln_ppl_ratio.uncertainty);
    row("Mean PPL(Q)/PPL(base)", s.ppl_ratio.value, s.ppl_ratio.uncertainty);
    row("Mean PPL(Q)-PPL(base)", s.ppl_difference.value, s.ppl_difference.uncertainty);
    row("Mean KLD", s.kld_mean.value, s.kld_mean.uncertainty);
    row("Maximum KLD", s.kld_max);
    for (const auto& [p, v] : s.kld_percentiles) row(percent_label(p, "KLD"), v);
    row("Minimum KLD", s.kld_min);
    row("Mean Δp %", 100.0 * s.delta_p_mean.value, 100.0 * s.delta_p_mean.uncertainty);
    row("Maximum Δp %", 100.0 * s.delta_p_max);
    for (const auto& [p, v] : s.delta_p_percentiles) row(percent_label(p, "Δp %"), 100.0 * v);
    row("Minimum Δp %", 100.0 * s.delta_p_min);
    row("RMS Δp %", 100.0 * s.delta_p_rms.value, 100.0 * s.delta_p_rms.uncertainty);
    row("Same top p %", 100.0 * s.same_top.value, 100.0 * s.same_top.uncertainty);
    return t;
}

nlohmann::ordered_json kld_json(const KldStatistics& s) {
    const auto pair = [](const ValueWithError& v) { return nlohmann::ordered_json{{"value", v.value}, {"uncertainty", v.uncertainty}}; };
    const auto table = [](const std::vector<std::pair<double, double>>& ps) {
        nlohmann::ordered_json j = nlohmann::ordered_json::object();
        for (const auto& [p, v] : ps) {
            char key[16];
            std::snprintf(key, sizeof key, "%.1f", p);
            j[key] = v;
        }
        return j;
    };
    return {{"positions", s.positions},
            {"vocabulary", s.vocabulary},
            {"ppl_target", pair(s.ppl_target)},
            {"ppl_base", pair(s.ppl_base)},
            {"ln_ppl_correlation", s.ln_ppl_correlation},
            {"ln_ppl_ratio", pair(s.ln_ppl_ratio)},
            {"ppl_ratio", pair(s.ppl_ratio)},
            {"ppl_difference", pair(s.ppl_difference)},
            {"kld", {{"mean", pair(s.kld_mean)}, {"max", s.kld_max}, {"min", s.kld_min}, {"percentiles", table(s.kld_percentiles)}}},
            {"delta_p", {{"mean", pair(s.delta_p_mean)},
                         {"rms", pair(s.delta_p_rms)},
                         {"max", s.delta_p_max},
                         {"min", s.delta_p_min},
                         {"percentiles", table(s.delta_p_percentiles)}}},
            {"same_top", pair(s.same_top)}};
}

}  // namespace xb::report
