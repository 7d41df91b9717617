// graph-run's tests in llama-bench's words: -p N (a prompt of N tokens, "ppN"), -n N (N tokens
// generated one after another, "tgN": one graph of one token, its batch moved through the cache
// step by step with the recurrent states carried, the N steps timed together), -d D (the KV depth
// both start from) and --ngl N (layers on the GPU). Each test sets a model builder's tokens and
// cache positions (llama_decoder or a GGUF model) before it is built.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/config_spec.hpp"
#include "core/status.hpp"

namespace xb::tools {

struct TokenTest {
    std::optional<int> n_tokens;  // unset: the config's own
    std::optional<int> n_kv;      // cache positions, the batch last (0: the batch alone)
    int generated = 0;            // -n: tokens generated one after another per timed repetition (0: one compute)
};

// Every (-p or -n) x -d combination, prompts first; one test that keeps the config as it is when
// neither -p nor -n is given.
std::vector<TokenTest> token_tests(const std::vector<int>& prompts, const std::vector<int>& generated,
                                   const std::vector<int>& depths);

// A run's test as llama-bench reports it.
struct TestLabel {
    std::string name;  // "pp512", "pp64@d256", "tg16", "tg16@d112"; "" for a graph without tokens
    int n_prompt = 0;  // tokens of a prompt test
    int n_gen = 0;     // tokens of a generation test
    int n_depth = 0;   // cache positions before the test's first token
};

// The label of a model computing n_tokens tokens over n_kv cache positions, `generated` of them
// one after another (0: in one batch).
TestLabel test_label(int n_tokens, int n_kv, int generated = 0);
// The config's tokens and cache positions (after the test's edit): nullopt when its graph is not
// a model builder with tokens.
std::optional<std::pair<int, int>> spec_tokens(const config::ConfigSpec& spec);

// Sets the test's tokens and --ngl's offload in `spec`; InvalidArgument naming the config when the
// test sets tokens and the config's graph has none.
Status apply_token_test(const TokenTest& test, std::optional<int> gpu_layers, config::ConfigSpec& spec);

}  // namespace xb::tools
