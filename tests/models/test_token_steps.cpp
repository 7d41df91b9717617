// Decoding token after token with one graph: a model of one token over the seven cache cells of the
// fixtures' batch, its batch moved one position on (Model::move_batch: positions, masks and the
// cells its keys and values go to) and its recurrent states carried between the computes
// (RecurrentStates::Kept). Each step's logits must be the float64 forward pass's logits of that
// position, computed from the whole batch at once (tests/data/models/**/<model>.logits.npy): the
// KV cache written at the right cells, the attention masked to the positions decoded so far, and
// the convolution and scan states handed on. graph-run's -n N times exactly this loop.
#include <gtest/gtest.h>

#include <cctype>
#include <nlohmann/json.hpp>

#include "model_fixtures.hpp"
#include "report/metrics.hpp"

namespace xb::config {
namespace {

using testing::model_path;
using testing::npy_values;
using testing::read_manifest;

struct StepCase {
    std::string model;    // the .gguf file, relative to tests/data/models/
    std::string weights;  // f32, f16 or quant
    std::string logits;   // the float64 pass over the whole batch: (tokens, vocab)
    std::vector<std::string> backends;
    int offload_layers = 0;  // with two devices: the last layers on the first (a layer split)
};

void PrintTo(const StepCase& c, std::ostream* os) { *os << c.model; }

// The fixtures' bound against float64 (test_gguf_model.cpp's logits_bound).
double bound(const std::string& weights) { return weights == "quant" ? 2e-3 : 1e-9; }

double nmse(const std::vector<float>& got, const std::vector<float>& want) { return report::compare(got, want).nmse; }

// Every fixture's all-layers reference of the batch (n_kv = its 7 tokens) on the CPU; each
// architecture's also on SIM0 with its last layer there (a hybrid's states and caches on both sides
// of the split).
std::vector<StepCase> step_cases() {
    std::vector<StepCase> out;
    for (const std::string dir : {"", "arch/"}) {
        const nlohmann::json manifest = read_manifest(dir);
        const size_t n_tokens = manifest.at("tokens").size();
        for (const auto& [name, m] : manifest.at("models").items()) {
            for (const auto& r : m.at("references")) {
                if (r.at("n_layers").get<int>() != 0 || r.at("n_kv").get<size_t>() != n_tokens) continue;
                StepCase c{dir + m.at("file").get<std::string>(), m.at("weights").get<std::string>(),
                           dir + r.at("logits").get<std::string>(), {"CPU"}, 0};
                out.push_back(c);
                if (dir == "arch/") {
                    c.backends = {"SIM0", "CPU"};
                    c.offload_layers = 1;
                    out.push_back(c);
                }
            }
        }
    }
    return out;
}

// A model of the fixture's first token alone over a cache of `cells` cells, placed and computed
// once at its built position (the last cell) through the scheduler.
Result<std::unique_ptr<testing::Placed>> one_token_model(const StepCase& c, int first_token, int cells, bool flash) {
    nlohmann::json config = {{"graph",
                              {{"model", "gguf"},
                               {"file", c.model},
                               {"params", {{"tokens", {first_token}}, {"n_kv", cells}, {"flash_attn", flash}}}}},
                             {"placement", {{"backends", c.backends}}}};
    if (c.offload_layers > 0) config["placement"]["offload_layers"] = c.offload_layers;
    XB_ASSIGN_OR_RETURN(ConfigSpec spec, parse_config(config.dump(), "steps.json", model_path("")));
    XB_ASSIGN_OR_RETURN(Model model, build_model(spec, global_registry()));
    return testing::compute_scheduled(std::move(model));
}

// Decodes `tokens` one at a time from position 0 (states empty at the start); each step's logits
// in order, [vocab] per token. `states` Empty at every step breaks the sequence on purpose.
Result<std::vector<float>> decode(testing::Placed& p, const std::vector<int32_t>& tokens, RecurrentStates states) {
    std::vector<float> logits;
    for (size_t i = 0; i < tokens.size(); ++i) {
        XB_RETURN_IF_ERROR(p.model.set_tokens(std::span<const int32_t>(&tokens[i], 1)));
        XB_RETURN_IF_ERROR(p.model.move_batch(static_cast<int>(i)));
        XB_RETURN_IF_ERROR(p.model.set_inputs(i == 0 ? RecurrentStates::Empty : states));
        XB_RETURN_IF_ERROR(p.sched->graph_compute(p.model.graph));
        XB_ASSIGN_OR_RETURN(std::vector<float> step, tensor_get_f32(*p.model.find("result_output")));
        logits.insert(logits.end(), step.begin(), step.end());
    }
    return logits;
}

class TokenSteps : public ::testing::TestWithParam<StepCase> {};

TEST_P(TokenSteps, EachStepIsTheBatchsPosition) {
    const StepCase& c = GetParam();
    const std::vector<int32_t> tokens = read_manifest("").at("tokens").get<std::vector<int32_t>>();
    const std::vector<float> want = npy_values(c.logits);
    ASSERT_EQ(want.size() % tokens.size(), 0u);
    for (const bool flash : {true, false}) {
        SCOPED_TRACE(flash ? "flash_attn_ext" : "mul_mat + soft_max_ext");
        auto placed = one_token_model(c, tokens[0], static_cast<int>(tokens.size()), flash);
        ASSERT_TRUE(placed.is_ok()) << placed.status().to_string();
        auto got = decode(**placed, tokens, RecurrentStates::Kept);
        ASSERT_TRUE(got.is_ok()) << got.status().to_string();
        ASSERT_EQ(got->size(), want.size());
        EXPECT_LT(nmse(*got, want), bound(c.weights));
        if (!(*placed)->model.states.empty()) {
            // The states matter: emptied before every token, the sequence is another model's.
            auto forgetful = decode(**placed, tokens, RecurrentStates::Empty);
            ASSERT_TRUE(forgetful.is_ok()) << forgetful.status().to_string();
            EXPECT_GT(nmse(*forgetful, want), 100 * bound(c.weights));
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TokenSteps, ::testing::ValuesIn(step_cases()),
                         [](const ::testing::TestParamInfo<StepCase>& info) {
                             std::string name = info.param.model.substr(0, info.param.model.size() - 5);
                             if (info.param.offload_layers > 0) name += "_split";
                             for (char& ch : name) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                             return name;
                         });

// The batch cannot leave the cache, a graph without one cannot move, and token ids must fill the batch.
TEST(TokenStepLimits, MovesOnlyWithinTheCache) {
    const StepCase c{"tiny-llama.gguf", "f32", "", {"CPU"}, 0};
    auto placed = one_token_model(c, 1, 4, true);
    ASSERT_TRUE(placed.is_ok()) << placed.status().to_string();
    Model& m = (*placed)->model;
    EXPECT_TRUE(m.move_batch(3).is_ok());
    const Status past = m.move_batch(4);
    EXPECT_EQ(past.code(), StatusCode::InvalidArgument);
    EXPECT_NE(past.message().find("runs past the cache's 4 cells"), std::string::npos) << past.to_string();
    EXPECT_EQ(m.move_batch(-1).code(), StatusCode::InvalidArgument);
    const std::vector<int32_t> two = {1, 2};
    EXPECT_EQ(m.set_tokens(two).code(), StatusCode::InvalidArgument);

    auto spec = parse_config(R"({"graph": {"model": "mlp", "params": {"n_embd": 8, "n_hidden": 16, "n_batch": 2}}})", "t.json",
                             model_path(""));
    ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
    auto no_cache = build_model(*spec, global_registry());
    ASSERT_TRUE(no_cache.is_ok()) << no_cache.status().to_string();
    EXPECT_NE(no_cache->move_batch(0).message().find("no KV cache"), std::string::npos);
}

}  // namespace
}  // namespace xb::config
