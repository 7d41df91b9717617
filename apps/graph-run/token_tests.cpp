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
    // Generating n tokens one after another: a graph of one token over d + n cells, moved from
    // position d to d + n - 1.
    for (int n : generated) {
        for (int d : from) tests.push_back({1, d + n, n});
    }
    return tests;
}

TestLabel test_label(int n_tokens, int n_kv, int generated) {
    TestLabel label;
    if (n_tokens <= 0) return label;
    if (n_tokens == 1 && generated == 0) generated = 1;  // one token computed once: llama-bench's tg1
    const int computed = generated > 0 ? generated : n_tokens;
    label.n_depth = std::max(n_kv - computed, 0);
    const std::string at = label.n_depth > 0 ? "@d" + std::to_string(label.n_depth) : "";
    if (generated > 0) {
        label.n_gen = generated;
        label.name = "tg" + std::to_string(generated) + at;
    } else {
        label.n_prompt = n_tokens;
        label.name = "pp" + std::to_string(n_tokens) + at;
    }
    return label;
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
