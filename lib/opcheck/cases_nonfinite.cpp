// Non-finite twins of the conformance cases: the same graph with NaN, or an infinity, in one of its
// float inputs. A NaN reaches every output that exact arithmetic carries it to (an element, a row
// through its norm or softmax, a product's column), and a kernel that drops it (a max that skips
// it, a block quantized as if it were zeros, a softmax row taken for masked) makes a wrong backend
// look right to a validator: its outputs are finite where the truth is not, and the non-finite
// verdicts of op-check, graph-run and backend-compare never see them.
#include <algorithm>
#include <iterator>
#include <limits>
#include <string_view>

#include "opcheck/case_graph.hpp"
#include "opcheck/cases.hpp"

namespace xb::opcheck {

namespace {

// Which input of which cases holds the special values: the cases of a family whose names start
// with `prefix` (all of them for ""), unless they start with one of `except`.
struct Target {
    std::vector<OpCase> (*family)();
    std::string_view prefix;
    int input;
    std::vector<std::string_view> except = {};
};

// About one value in kEvery (at least one) of the input is special, at seeded random positions: a
// product's column, a norm's row or a query's scores are poisoned and others are not, so both
// directions are judged (non-finite where the truth is, finite elsewhere).
constexpr int64_t kEvery = 97;

const std::vector<Target>& nan_targets() {
    static const std::vector<Target> targets = {
        {elementwise_cases, "", 0},
        {elementwise_cases, "add_f32_f32_bcast123", 1},  // a broadcast operand's NaN reaches several outputs
        {layout_cases, "", 0},
        // argsort, top_k and argmax order NaN by their own rules (cases_reduce.cpp's argsort_nan).
        {reduce_cases, "", 0, {"argsort", "top_k", "argmax"}},
        {attention_cases, "soft_max", 0},
        {attention_cases, "rope", 0},
        {attention_cases, "flash_attn_ext", 0},  // q: every score of the query
        {attention_cases, "flash_attn_ext", 1},  // k: the key's score for every query that attends it
        {attention_cases, "flash_attn_ext", 2},  // v
        {matmul_cases, "", 0},                   // float weights
        {matmul_cases, "", 1},                   // activations
        {quant_cases, "mul_mat", 1},             // activations of every quantized weight type
        {moe_cases, "mul_mat_id", 1},
        {moe_cases, "add_id", 0},
        {recurrent_cases, "", 0},
    };
    return targets;
}

// Infinities in the products' activations: an infinite activation block (scale inf, values 0)
// gives inf * 0 = NaN where exact arithmetic gives an infinity, so any non-finite value passes.
const std::vector<Target>& inf_targets() {
    static const std::vector<Target> targets = {
        {matmul_cases, "mul_mat", 1},
        {quant_cases, "mul_mat", 1},
        {moe_cases, "mul_mat_id", 1},
    };
    return targets;
}

bool selected(const Target& t, const std::string& name) {
    if (!name.starts_with(t.prefix)) return false;
    return std::none_of(t.except.begin(), t.except.end(), [&](std::string_view e) { return name.starts_with(e); });
}

bool is_plain_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

// Whether `input` of `c` can hold special values: a float input, in a graph that rounds nothing to
// a block format (a block quantized from NaN has no agreed value: ggml's quantizers differ by
// format, and the reference would judge our rounding by itself).
bool can_poison(const OpCase& c, int input) {
    Result<CaseGraph> graph = CaseGraph::build(c);
    if (!graph.is_ok()) return false;
    const auto& inputs = graph->builder().inputs();
    if (input >= static_cast<int>(inputs.size()) || !is_plain_float(inputs[static_cast<size_t>(input)].tensor->type)) {
        return false;
    }
    const Graph& g = graph->graph();
    for (int i = 0; i < g.n_nodes(); ++i) {
        if (is_quantized(g.node(i)->type)) return false;
    }
    return true;
}

// `generate` with about one value in kEvery replaced by `special`.
Generator with_special(Generator generate, float special) {
    return [generate = std::move(generate), special](const Shape& ne, std::mt19937& rng) {
        std::vector<float> values = generate(ne, rng);
        if (values.empty()) return values;
        std::uniform_int_distribution<size_t> at(0, values.size() - 1);
        const size_t count = std::max<size_t>(1, values.size() / kEvery);
        for (size_t i = 0; i < count; ++i) values[at(rng)] = special;
        return values;
    };
}

OpCase twin(const OpCase& base, int input, float special, const std::string& tag) {
    OpCase c = base;
    c.name = base.name + "_" + tag + "_in" + std::to_string(input);
    c.build = [build = base.build, input, special](CaseBuilder& b) {
        Tensor* out = build(b);
        const auto i = static_cast<size_t>(input);
        if (i < b.inputs().size()) b.set_generator(i, with_special(b.inputs()[i].generate, special));
        return out;
    };
    if (!std::isnan(special)) c.specials = Specials::AnyNonFinite;
    return c;
}

void add_twins(const std::vector<Target>& targets, float special, const std::string& tag, std::vector<OpCase>& out) {
    for (const Target& t : targets) {
        for (const OpCase& c : t.family()) {
            if (selected(t, c.name) && can_poison(c, t.input)) out.push_back(twin(c, t.input, special, tag));
        }
    }
}

}  // namespace

std::vector<OpCase> nonfinite_cases() {
    std::vector<OpCase> cases;
    add_twins(nan_targets(), std::numeric_limits<float>::quiet_NaN(), "nan", cases);
    add_twins(inf_targets(), std::numeric_limits<float>::infinity(), "inf", cases);
    return cases;
}

}  // namespace xb::opcheck
