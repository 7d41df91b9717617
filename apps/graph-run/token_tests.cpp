#include "token_tests.hpp"

#include <algorithm>

namespace xb::tools {

std::vector<TokenTest> token_tests(const std::vector<int>& prompts, const std::vector<int>& generated,
                                   const std::vector<int>& depths) {
    if (prompts.empty() && generated.empty()) return {TokenTest{}};
    const std::vector<int> from = depths.empty() ? std::vector<int>{0} : depths;
    std::vector<TokenTest> tests;
    for (int p : prompts) {
        for (int d : from) tests.push_back({p, d == 0 ? 0 : d + p});
    }
    // Generating n tokens one at a time: timed as the last of them, one token over d + n positions
    // (llama-bench averages the n steps; the last one reads the most cache).
    for (int n : generated) {
        for (int d : from) tests.push_back({1, d + n});
    }
    return tests;
}

std::string test_name(int n_tokens, int n_kv) {
    if (n_tokens <= 0) return "";
    const int depth = n_kv > n_tokens ? n_kv - n_tokens : 0;
    if (n_tokens == 1) return "tg1@kv" + std::to_string(std::max(n_kv, 1));
    return "pp" + std::to_string(n_tokens) + (depth > 0 ? "@d" + std::to_string(depth) : "");
}

std::optional<std::pair<int, int>> spec_tokens(const config::ConfigSpec& spec) {
    if (!spec.model) return std::nullopt;
    switch (spec.model->kind) {
        case config::ModelKind::LlamaDecoder: return std::pair{spec.model->llama.n_tokens, spec.model->llama.n_kv};
        case config::ModelKind::Gguf: return std::pair{spec.model->gguf.n_tokens, spec.model->gguf.n_kv};
        default: return std::nullopt;
    }
}

Status apply_token_test(const TokenTest& test, std::optional<int> gpu_layers, config::ConfigSpec& spec) {
    if (gpu_layers) spec.placement.offload_layers = *gpu_layers;
    if (!test.n_tokens) return Status::ok();
    if (!spec_tokens(spec)) {
        return Status(StatusCode::InvalidArgument,
                      spec.source + ": -p and -n set the tokens of a model (llama_decoder or a GGUF file); this "
                                    "config's graph has none");
    }
    int& n_tokens = spec.model->kind == config::ModelKind::Gguf ? spec.model->gguf.n_tokens : spec.model->llama.n_tokens;
    int& n_kv = spec.model->kind == config::ModelKind::Gguf ? spec.model->gguf.n_kv : spec.model->llama.n_kv;
    n_tokens = *test.n_tokens;
    n_kv = test.n_kv.value_or(0);
    return Status::ok();
}

}  // namespace xb::tools
