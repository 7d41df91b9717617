// How far one backend's next-token distributions are from another's over a token sequence, in the
// statistics llama.cpp's `llama-perplexity --kl-divergence` reports (the measure its community
// judges a backend or a quantization by): the perplexity of each side and their ratio, the
// Kullback-Leibler divergence of the target's distribution from the base's at every position, the
// change Δp of the probability of the sequence's actual next token, and how often both pick the
// same top token.
//
// Every position but the last counts (its next token is the sequence's next); llama-perplexity
// scores the second half of each context window instead, so figures over the same text differ a
// little in what they average. Uncertainties are llama.cpp's: the standard error of each mean, and
// of a ratio or an RMS by first-order propagation. Percentiles interpolate linearly between ranks.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.hpp"
#include "report/table.hpp"

namespace xb::report {

struct ValueWithError {
    double value = 0;
    double uncertainty = 0;
};

struct KldStatistics {
    int64_t positions = 0;  // scored positions (tokens - 1)
    int64_t vocabulary = 0;
    // Perplexity: exp(mean negative log-likelihood of each next token), base and target ("Q").
    ValueWithError ppl_base, ppl_target;
    double ln_ppl_correlation = 0;  // Pearson's, of the two sides' per-token log-likelihoods
    ValueWithError ln_ppl_ratio;    // mean ln(PPL(Q)/PPL(base))
    ValueWithError ppl_ratio;       // PPL(Q)/PPL(base)
    ValueWithError ppl_difference;  // PPL(Q) - PPL(base)
    // KL(base || target) per position, in nats.
    ValueWithError kld_mean;
    double kld_max = 0, kld_min = 0;
    std::vector<std::pair<double, double>> kld_percentiles;  // (percent, value), 99.9 down to 0.1
    // Δp = p_target(next token) - p_base(next token), as fractions (the table shows percent).
    ValueWithError delta_p_mean;
    ValueWithError delta_p_rms;
    double delta_p_max = 0, delta_p_min = 0;
    std::vector<std::pair<double, double>> delta_p_percentiles;
    ValueWithError same_top;  // fraction of positions whose most likely token is the same on both sides
};

// The statistics of `target` against `base`: logits of every position, n_vocab values each (position
// by position, as a [n_vocab, n_positions] tensor holds them), and the sequence's token ids (one per
// position: the next token of position i is tokens[i + 1]). InvalidArgument when the sizes disagree,
// fewer than two positions are given, a token id is outside the vocabulary, or a logit is not
// finite.
Result<KldStatistics> kl_divergence(std::span<const float> base, std::span<const float> target, int64_t n_vocab,
                                    std::span<const int32_t> tokens);

// llama-perplexity's three blocks as rows (statistic, value, ±), Δp in percent.
Table kld_table(const KldStatistics& s);
nlohmann::ordered_json kld_json(const KldStatistics& s);

}  // namespace xb::report
