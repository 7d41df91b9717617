// backend-compare --kld: the two devices' next-token distributions over a model's token sequence,
// compared as llama-perplexity --kl-divergence compares a model with its base
// (report/kl_divergence.hpp). Each device computes the whole graph once, through the scheduler
// (its intermediate results reuse memory; only the logits are kept), with every position's logits.
#pragma once

#include <string>

#include "cli.hpp"
#include "report/kl_divergence.hpp"

namespace xb::tools {

struct KldRun {
    std::string model;  // its name
    report::KldStatistics statistics;
};

// The statistics of `target`'s logits against `base`'s for the config of `options` (its tokens from
// the config or --tokens). InvalidArgument when the model is not a llama.cpp model file with its
// tokens given, or computes fewer positions' logits than it has tokens.
Result<KldRun> compare_logits(const CommonOptions& options, const std::string& base, const std::string& target);

}  // namespace xb::tools
