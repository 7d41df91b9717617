// Parsing configs into a ConfigSpec and building models from them: expressions, defaults, inits,
// outputs, model-builder overrides, seeds and build options.
#include <gtest/gtest.h>

#include "config/config_error.hpp"
#include "config/expr.hpp"
#include "config/init.hpp"
#include "test_config_util.hpp"

namespace xb::config {
namespace {

Result<ConfigSpec> parse(std::string_view text) { return parse_config(text, "test.json", testing::data_path("")); }

Result<Model> build(std::string_view text, const BuildOptions& options = {}) {
    XB_ASSIGN_OR_RETURN(ConfigSpec spec, parse(text));
    return build_model(spec, global_registry(), options);
}

TEST(ConfigExpr, EvaluatesArithmeticOverParams) {
    const ParamList params = {{"n_embd", 64}, {"n_head", 4}, {"n_ff", 176}};
    EXPECT_EQ(eval_expr("n_embd / n_head", params).value(), 16);
    EXPECT_EQ(eval_expr("2 * n_ff + 1", params).value(), 353);
    EXPECT_EQ(eval_expr("-(n_embd - 4) % 7", params).value(), -4);
    EXPECT_EQ(eval_expr(" 1.5e1 ", params).value(), 15);
    EXPECT_FALSE(eval_expr("n_embd / 0", params).is_ok());
    EXPECT_FALSE(eval_expr("2 *", params).is_ok());
    EXPECT_FALSE(eval_expr("(1 + 2", params).is_ok());
    EXPECT_FALSE(eval_expr("3 $ 4", params).is_ok());
    const Status s = eval_expr("n_emdb", params).status();
    EXPECT_NE(s.message().find("did you mean 'n_embd'?"), std::string::npos) << s.message();
}

TEST(ConfigNames, GlobsPointersAndSuggestions) {
    EXPECT_TRUE(glob_match("blk.*.attn_?", "blk.12.attn_q"));
    EXPECT_TRUE(glob_match("*", ""));
    EXPECT_TRUE(glob_match("a*b*c", "axxbyyc"));
    EXPECT_FALSE(glob_match("blk.*.attn_q", "blk.1.attn_k"));
    EXPECT_FALSE(glob_match("a?", "a"));
    EXPECT_EQ(child_path("/tensors", "a/b~c"), "/tensors/a~1b~0c");
    EXPECT_EQ(child_path("/graph", 7), "/graph/7");
    EXPECT_EQ(did_you_mean("grpah", {"graph", "name"}), " (did you mean 'graph'?)");
    EXPECT_EQ(did_you_mean("completely", {"graph", "name"}), "");
    // The closest of several, by edits and adjacent transpositions.
    EXPECT_EQ(did_you_mean("n_laeyrs", {"n_embd", "n_layers", "n_head"}), " (did you mean 'n_layers'?)");
    EXPECT_EQ(did_you_mean("blk.0.attn_qq.weight", {"blk.0.attn_k.weight", "blk.0.attn_q.weight"}),
              " (did you mean 'blk.0.attn_q.weight'?)");
    EXPECT_EQ(did_you_mean("n_hed", {"n_embd", "n_head"}), " (did you mean 'n_head'?)");
    EXPECT_EQ(join_names({"a", "b", "c"}, 2), "a, b, ... (1 more)");
}

TEST(ConfigParse, ParamsShapesAndDefaults) {
    auto spec = parse(R"({
        "name": "p", "seed": 5,
        "params": { "n": 8, "m": "n / 2", "two_m": "2 * m" },
        "defaults": { "type": "f16", "init": 0.25 },
        "tensors": {
            "w": { "shape": ["n", "two_m"] },
            "x": { "shape": ["n", "m"], "type": "f32", "role": "input" }
        },
        "graph": [ { "name": "y", "op": "mul_mat", "args": ["w", "x"] } ]
    })");
    ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
    EXPECT_EQ(spec->name, "p");
    EXPECT_EQ(spec->seed, 5u);
    EXPECT_EQ(spec->param("two_m").value(), 8);
    EXPECT_EQ(spec->default_type, DType::F16);
    ASSERT_TRUE(spec->default_init.has_value());
    EXPECT_EQ(spec->default_init->kind, InitKind::Constant);
    EXPECT_EQ(spec->default_init->value, 0.25);
    const TensorSpec* w = spec->find_tensor("w");
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(*w->shape, (std::vector<int64_t>{8, 8}));
    auto model = build_model(*spec, global_registry());
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    EXPECT_EQ(model->find("w")->type, DType::F16);
    EXPECT_EQ(model->find("x")->type, DType::F32);
    EXPECT_TRUE(model->find("x")->is_input());
    ASSERT_EQ(model->outputs.size(), 1u);  // the last op, when none is marked
    EXPECT_EQ(model->outputs[0]->name, "y");
    EXPECT_TRUE(model->outputs[0]->is_output());
    EXPECT_EQ(model->weights, std::vector<Tensor*>{model->find("w")});
    EXPECT_EQ(model->inputs, std::vector<Tensor*>{model->find("x")});
    EXPECT_DOUBLE_EQ(model->matmul_flops, 2.0 * 8 * 8 * 4);
}

TEST(ConfigParse, NameDefaultsToTheFileStem) {
    auto spec = parse_config(R"({"tensors": {"x": {"shape": [2]}}, "graph": [{"name": "y", "op": "sqr", "args": ["x"]}]})",
                             "dir/my-config.json");
    ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
    EXPECT_EQ(spec->name, "my-config");
}

TEST(ConfigParse, RelativeFilesResolveAgainstTheConfigDirectory) {
    auto spec = parse_config(R"({"tensors": {"x": {"shape": [3, 2], "init": {"kind": "npy", "file": "data/x.npy"}}},
                                 "graph": [{"name": "y", "op": "sqr", "args": ["x"]}]})",
                             "cfg.json", "/some/dir");
    ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
    EXPECT_EQ(spec->tensors[0].init->file, "/some/dir/data/x.npy");
}

TEST(ConfigParse, EveryOpParameterKind) {
    auto spec = parse(R"({
        "tensors": { "x": { "shape": [8, 4], "role": "input" } },
        "graph": [
            { "name": "v", "op": "view", "args": ["x"], "params": { "shape": [4, 2], "strides": [32], "offset": "2 * 8" } },
            { "name": "r", "op": "glu", "args": ["x", null], "params": { "fn": "geglu", "swapped": true }, "output": true }
        ]
    })");
    ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
    ASSERT_EQ(spec->ops.size(), 2u);
    EXPECT_EQ(std::get<std::vector<double>>(spec->ops[0].params.at("shape").value), (std::vector<double>{4, 2}));
    EXPECT_EQ(std::get<double>(spec->ops[0].params.at("offset").value), 16);
    EXPECT_EQ(spec->ops[0].params.at("offset").path, "/graph/0/params/offset");
    EXPECT_EQ(std::get<std::string>(spec->ops[1].params.at("fn").value), "geglu");
    EXPECT_TRUE(std::get<bool>(spec->ops[1].params.at("swapped").value));
    EXPECT_TRUE(spec->ops[1].args[1].name.empty());
    EXPECT_TRUE(spec->ops[1].output);
    auto model = build_model(*spec, global_registry());
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    const Tensor* v = model->find("v");
    EXPECT_EQ(v->view_offs, 16u);
    EXPECT_EQ(v->nb[1], 32u);
    EXPECT_EQ(model->outputs, std::vector<Tensor*>{model->find("r")});
    // v is not used by the output: it is not computed, and the model says so.
    ASSERT_EQ(model->notes.size(), 1u);
    EXPECT_NE(model->notes[0].find("op 'v' (/graph/0) is not used"), std::string::npos) << model->notes[0];
}

TEST(ConfigParse, OpErrorsNameThePath) {
    const auto error = [](std::string_view text) { return build(text).status().message(); };
    EXPECT_NE(error(R"({"tensors": {"x": {"shape": [4]}}, "graph": [{"name": "y", "op": "glu", "args": ["x", "x"], "params": {"fn": "swiglu", "swapped": true}}]})")
                  .find("test.json: /graph/0: op 'y': glu: 'swapped' applies to the fused form"),
              std::string::npos);
    EXPECT_NE(error(R"({"tensors": {"x": {"shape": [4]}}, "graph": [{"name": "y", "op": "view", "args": ["x"], "params": {"shape": [8]}}]})")
                  .find("/graph/0: op 'y': view: view [8, 1, 1, 1] with strides 32, 32, 32 at offset 0 spans 32 bytes, past the end"),
              std::string::npos);
    EXPECT_NE(error(R"({"tensors": {"x": {"shape": [4]}}, "graph": [{"name": "y", "op": "permute", "args": ["x"], "params": {"axes": [0, 0]}}]})")
                  .find("/graph/0: op 'y': permute: axes must be a permutation"),
              std::string::npos);
    EXPECT_NE(error(R"({"tensors": {"x": {"shape": [4]}}, "graph": [{"name": "y", "op": "sqr", "args": [null]}]})")
                  .find("/graph/0/args/0: argument 'a' of sqr is required"),
              std::string::npos);
    EXPECT_NE(error(R"({"tensors": {"x": {"shape": [4]}}, "graph": [{"name": "y", "op": "sqr", "args": ["x"], "params": {"a": 1}}]})")
                  .find("/graph/0/params/a: op 'sqr' has no parameters"),
              std::string::npos);
    EXPECT_NE(error(R"({"tensors": {"x": {"shape": [4]}}, "graph": [{"name": "y", "op": "concat", "args": ["x", "x"]}]})")
                  .find("/graph/0: missing parameter 'dim' of concat (give it in \"params\")"),
              std::string::npos);
    EXPECT_NE(error(R"({"tensors": {"x": {"shape": [4]}}, "graph": [{"name": "x", "op": "sqr", "args": ["x"]}]})")
                  .find("/graph/0/name: 'x' is already a weight tensor (/tensors/x)"),
              std::string::npos);
    EXPECT_NE(error(R"({"tensors": {"x": {"shape": [4]}, "z": {"role": "output"}}, "graph": [{"name": "y", "op": "sqr", "args": ["x"]}]})")
                  .find("/tensors/z/role: role output describes the result of an op, but no op is called 'z'"),
              std::string::npos);
    EXPECT_NE(error(R"({"tensors": {"x": {"shape": [4]}, "y": {"role": "output", "type": "f16"}}, "graph": [{"name": "y", "op": "sqr", "args": ["x"]}]})")
                  .find("/tensors/y/type: op 'y' (/graph/0) computes f32, the config declares f16"),
              std::string::npos);
    EXPECT_NE(error(R"({"tensors": {"x": {"shape": [4.5]}}, "graph": [{"name": "y", "op": "sqr", "args": ["x"]}]})")
                  .find("/tensors/x/shape/0: expected an integer, got number 4.5"),
              std::string::npos);
    EXPECT_NE(error(R"({"tensors": {"x": {"shape": [1, 2, 3, 4, 5]}}, "graph": [{"name": "y", "op": "sqr", "args": ["x"]}]})")
                  .find("/tensors/x/shape: a shape has 1 to 4 sizes"),
              std::string::npos);
    EXPECT_NE(error(R"({"tensors": {"x": {"shape": [4], "type": "f64"}}, "graph": [{"name": "y", "op": "sqr", "args": ["x"]}]})")
                  .find("/tensors/x/type: unknown type 'f64'"),
              std::string::npos);
    EXPECT_NE(error(R"({"tensors": {"x": {"shape": [4], "init": {"kind": "uniform", "min": 1, "max": 0}}}, "graph": [{"name": "y", "op": "sqr", "args": ["x"]}]})")
                  .find("/tensors/x/init: uniform needs min < max"),
              std::string::npos);
    EXPECT_NE(error(R"({"tensors": {"x": {"shape": [4]}}, "graph": [{"name": "y", "op": "sqr", "args": ["x"]}, {"name": "z", "op": "scale", "args": ["y"], "params": {"scale": 1, "scale": 2}}]})")
                  .find("test.json: /graph/1/params/scale: duplicate key 'scale'"),
              std::string::npos);
    EXPECT_NE(error(R"([1, 2])").find("test.json: /: expected an object, got an array"), std::string::npos);
    EXPECT_NE(error(R"({"name": "x"})").find("test.json: /: missing field 'graph'"), std::string::npos);
    EXPECT_NE(error(R"({"graph": []})").find("/graph: the graph has no ops"), std::string::npos);
    EXPECT_NE(error(R"({"seed": -1, "graph": []})").find("/seed: value -1 is out of range"), std::string::npos);
}

// Model builders: defaults per tensor, overrides by name and pattern, caches start at zero.
TEST(ConfigBuild, BuilderTensorOverrides) {
    auto model = build(R"({
        "graph": { "model": "llama_decoder",
                   "params": { "n_layers": 2, "n_embd": 32, "n_head": 4, "n_head_kv": 2, "n_ff": 64, "n_tokens": 3, "n_kv": 8, "n_vocab": 20 } },
        "defaults": { "init": { "kind": "normal", "mean": 0, "std": 0.1 } },
        "tensors": {
            "blk.*norm.weight": { "init": 1 },
            "blk.1.attn_norm.weight": { "init": 2, "type": "f32", "shape": [32] },
            "tokens": { "init": { "kind": "arange", "start": 0 } }
        }
    })");
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    const auto init_of = [&](const char* name) {
        for (const TensorInit& i : model->inits) {
            if (i.tensor->name == name) return i.init;
        }
        ADD_FAILURE() << "no init for " << name;
        return InitSpec{};
    };
    EXPECT_EQ(init_of("blk.0.attn_norm.weight").value, 1);
    EXPECT_EQ(init_of("blk.0.ffn_norm.weight").value, 1);
    EXPECT_EQ(init_of("blk.1.attn_norm.weight").value, 2);  // the exact name wins over the pattern
    EXPECT_EQ(init_of("blk.0.attn_q.weight").kind, InitKind::Normal);  // defaults.init
    EXPECT_EQ(init_of("output_norm.weight").kind, InitKind::Normal);
    EXPECT_EQ(init_of("cache_k_l1").kind, InitKind::Constant);   // caches ignore defaults.init
    EXPECT_EQ(init_of("cache_k_l1").value, 0);
    EXPECT_EQ(init_of("tokens").kind, InitKind::Arange);
    EXPECT_EQ(init_of("positions").start, 5);  // the batch is the last 3 of 8 positions
    EXPECT_EQ(init_of("kq_mask").kind, InitKind::CausalMask);
    EXPECT_EQ(init_of("inp_kv_idxs").start, 5);  // the cells the batch's keys and values go to: its positions
    EXPECT_EQ(model->n_tokens, 3);
    EXPECT_EQ(model->weights.size(), 3u + 2 * 9 + 2 * 2);  // token_embd, output_norm, output, layers, caches
    EXPECT_EQ(model->inputs.size(), 4u);  // tokens, positions, kq_mask, inp_kv_idxs
}

// "outputs": the positions whose logits are computed; the last ones, picked by inp_out_ids.
TEST(ConfigBuild, DecoderOutputsPickTheLastPositions) {
    const auto config = [](const std::string& outputs) {
        return R"({"graph": {"model": "llama_decoder", "params": {"n_layers": 1, "n_embd": 32, "n_head": 4, "n_ff": 64,
                   "n_tokens": 5, "n_vocab": 20, "outputs": )" + outputs + "}}}";
    };
    for (const auto& [outputs, rows] : std::vector<std::pair<std::string, int64_t>>{{"\"all\"", 5}, {"\"last\"", 1}, {"3", 3}, {"5", 5}}) {
        auto model = build(config(outputs));
        ASSERT_TRUE(model.is_ok()) << outputs << ": " << model.status().to_string();
        ASSERT_EQ(model->outputs.size(), 1u);
        EXPECT_EQ(model->outputs[0]->ne[1], rows) << outputs;
        bool picked = false;
        for (const TensorInit& i : model->inits) {
            if (i.tensor->name != "inp_out_ids") continue;
            picked = true;
            EXPECT_EQ(i.init.kind, InitKind::Arange);
            EXPECT_EQ(i.init.start, 5 - rows);  // the batch's last rows
        }
        EXPECT_EQ(picked, rows < 5) << outputs;
    }
    const auto error = [&](const std::string& outputs) { return build(config(outputs)).status().message(); };
    EXPECT_NE(error("\"some\"").find("/graph/params/outputs: "), std::string::npos) << error("\"some\"");
    EXPECT_NE(error("0").find("/graph/params/outputs: value 0 is out of range"), std::string::npos) << error("0");
    EXPECT_NE(error("6").find("/graph/params/outputs: value 6 is out of range"), std::string::npos) << error("6");
    EXPECT_NE(error("1.5").find("/graph/params/outputs: outputs must be \"all\", \"last\" or a number of positions"),
              std::string::npos)
        << error("1.5");
}

TEST(ConfigBuild, ExplicitGraphComputesTheRightValues) {
    auto model = build(R"({
        "tensors": {
            "a": { "shape": [3, 2], "role": "input", "init": { "kind": "arange", "start": 1 } },
            "b": { "shape": [3], "init": { "kind": "constant", "value": 10 } },
            "idx": { "shape": [2], "type": "i32", "role": "input", "init": { "kind": "arange", "start": 1, "step": -1 } }
        },
        "graph": [
            { "name": "s", "op": "add", "args": ["a", "b"] },
            { "name": "g", "op": "get_rows", "args": ["s", "idx"], "output": true },
            { "name": "t", "op": "scale", "args": ["g"], "params": { "scale": "1 / 2" }, "output": true }
        ]
    })");
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    auto placed = testing::compute_alone(std::move(model).value());
    ASSERT_TRUE(placed.is_ok()) << placed.status().to_string();
    const Model& m = (*placed)->model;
    ASSERT_EQ(m.outputs.size(), 2u);
    EXPECT_EQ(tensor_get_f32(*m.outputs[0]).value(), (std::vector<float>{14, 15, 16, 11, 12, 13}));
    EXPECT_EQ(tensor_get_f32(*m.outputs[1]).value(), (std::vector<float>{7, 7.5, 8, 5.5, 6, 6.5}));
}

// Random inits are a function of (seed, tensor name): the same whatever else the config holds, and
// different for another seed or name.
TEST(ConfigInit, RandomValuesAreSeededPerTensor) {
    Context ctx;
    Tensor* a = ctx.new_tensor(DType::F32, {1000});
    a->name = "a";
    Tensor* b = ctx.new_tensor(DType::F32, {1000});
    b->name = "b";
    InitSpec normal;
    normal.kind = InitKind::Normal;
    normal.mean = 1;
    normal.std = 2;
    InitFiles files;
    const auto values = [&](const Tensor& t, uint64_t seed) {
        auto bytes = init_values(t, normal, tensor_seed(seed, t.name), files, "x").value();
        std::vector<float> v(1000);
        std::memcpy(v.data(), bytes.data(), bytes.size());
        return v;
    };
    const auto a1 = values(*a, 1);
    EXPECT_EQ(a1, values(*a, 1));
    EXPECT_NE(a1, values(*a, 2));
    EXPECT_NE(a1, values(*b, 1));
    double mean = 0, var = 0;
    for (float v : a1) mean += v / 1000.0;
    for (float v : a1) var += (v - mean) * (v - mean) / 1000.0;
    EXPECT_NEAR(mean, 1.0, 0.25);
    EXPECT_NEAR(std::sqrt(var), 2.0, 0.25);

    Tensor* ints = ctx.new_tensor(DType::I32, {1000});
    InitSpec uniform;
    uniform.kind = InitKind::Uniform;
    uniform.min = 3;
    uniform.max = 7;
    auto bytes = init_values(*ints, uniform, 9, files, "x").value();
    std::vector<int32_t> iv(1000);
    std::memcpy(iv.data(), bytes.data(), bytes.size());
    std::set<int32_t> seen(iv.begin(), iv.end());
    EXPECT_EQ(seen, (std::set<int32_t>{3, 4, 5, 6}));
}

TEST(ConfigInit, SeedOverrideChangesEveryRandomTensor) {
    const char* text = R"({"seed": 1, "tensors": {"w": {"shape": [16]}}, "graph": [{"name": "y", "op": "sqr", "args": ["w"]}]})";
    const auto weights = [&](std::optional<uint64_t> seed) {
        BuildOptions o;
        o.seed = seed;
        auto placed = testing::compute_alone(build(text, o).value()).value();
        EXPECT_EQ(placed->model.seed, seed.value_or(1));
        return tensor_get_f32(*placed->model.find("w")).value();
    };
    const auto base = weights(std::nullopt);
    EXPECT_EQ(base, weights(1));
    EXPECT_NE(base, weights(2));
    for (float v : base) {
        EXPECT_GE(v, -1.0f);  // the default weight init: uniform [-1, 1)
        EXPECT_LT(v, 1.0f);
    }
}

TEST(ConfigInit, CausalMaskAndArange) {
    auto model = build(R"({
        "tensors": {
            "m": { "shape": [4, 2, 2], "role": "input", "init": { "kind": "causal_mask" } },
            "e": { "shape": [3, 11] },
            "r": { "shape": [5], "type": "i32", "role": "input", "init": { "kind": "arange", "start": 10, "step": -2 } }
        },
        "graph": [
            { "name": "a", "op": "scale", "args": ["m"], "params": { "scale": 1 }, "output": true },
            { "name": "b", "op": "get_rows", "args": ["e", "r"] }
        ]
    })");
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    const float inf = std::numeric_limits<float>::infinity();
    auto placed = testing::compute_alone(std::move(model).value());
    ASSERT_TRUE(placed.is_ok()) << placed.status().to_string();
    EXPECT_EQ(tensor_get_f32(*(*placed)->model.outputs[0]).value(),
              (std::vector<float>{0, 0, 0, -inf, 0, 0, 0, 0, 0, 0, 0, -inf, 0, 0, 0, 0}));
    // b is unused: its tensors are dropped with notes instead of being allocated.
    EXPECT_EQ((*placed)->model.inputs.size(), 1u);
    EXPECT_TRUE((*placed)->model.weights.empty());
    EXPECT_EQ((*placed)->model.notes.size(), 3u);
}

// "window": also -inf where the key is `window` or more positions behind the query (the queries
// are the last positions), as the sliding-window layers' mask; a window that is not a whole
// number is an error at its pointer.
TEST(ConfigInit, CausalMaskWithAWindow) {
    auto model = build(R"({
        "tensors": { "m": { "shape": [4, 2], "role": "input", "init": { "kind": "causal_mask", "window": 2 } } },
        "graph": [ { "name": "a", "op": "scale", "args": ["m"], "params": { "scale": 1 }, "output": true } ]
    })");
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    const float inf = std::numeric_limits<float>::infinity();
    auto placed = testing::compute_alone(std::move(model).value());
    ASSERT_TRUE(placed.is_ok()) << placed.status().to_string();
    EXPECT_EQ(tensor_get_f32(*(*placed)->model.outputs[0]).value(), (std::vector<float>{-inf, 0, 0, -inf, -inf, -inf, 0, 0}));
    auto bad = build(R"({
        "tensors": { "m": { "shape": [4, 2], "role": "input", "init": { "kind": "causal_mask", "window": 1.5 } } },
        "graph": [ { "name": "a", "op": "scale", "args": ["m"], "params": { "scale": 1 }, "output": true } ]
    })");
    ASSERT_FALSE(bad.is_ok());
    EXPECT_NE(bad.status().message().find("/tensors/m/init/window: the window is a whole number"), std::string::npos)
        << bad.status().message();
}

}  // namespace
}  // namespace xb::config
