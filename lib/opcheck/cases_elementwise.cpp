// Op cases of the element-wise ops: binary ops with broadcasting, add1, scale, sqr, sqrt, log,
// clamp, every unary activation, and the gated linear units (fused and split).
#include <algorithm>
#include <cmath>

#include "opcheck/cases.hpp"
#include "exact/ops.hpp"

namespace xb::opcheck {

namespace {

using xb::DType;
using xb::Tensor;

constexpr DType kFloatTypes[] = {DType::F32, DType::F16, DType::BF16};

// --- binary ops ----------------------------------------------------------------------------------

struct BinaryDef {
    const char* name;
    Tensor* (*build)(xb::Context&, Tensor*, Tensor*);
    double (*ref)(double, double);
    Generator rhs;  // values of b
};

std::vector<BinaryDef> binary_defs() {
    return {
        {"add", xb::add, [](double a, double b) { return a + b; }, uniform(-1.0f, 1.0f)},
        {"sub", xb::sub, [](double a, double b) { return a - b; }, uniform(-1.0f, 1.0f)},
        {"mul", xb::mul, [](double a, double b) { return a * b; }, uniform(-1.0f, 1.0f)},
        // Divisors kept away from zero so that quotients stay in a sensible range.
        {"div", xb::div, [](double a, double b) { return a / b; }, signed_uniform(0.5f, 2.0f)},
    };
}

// a (type ta, shape na) op b (type tb, shape nb), b tiled over a.
OpCase binary_case(const BinaryDef& op, DType ta, Shape na, DType tb, Shape nb, const std::string& tag) {
    return {std::string(op.name) + "_" + type_tag(ta) + "_" + type_tag(tb) + "_" + tag,
            [=](CaseBuilder& b) {
                Tensor* x = b.input(ta, na);
                Tensor* y = b.input(tb, nb, op.rhs);
                return op.build(b.ctx(), x, y);
            },
            [=](const std::vector<RefArray>& in) { return exact::binary(in[0], in[1], op.ref); },
            tolerance_for_output(ta)};
}

void add_binary_cases(std::vector<OpCase>& cases) {
    for (const BinaryDef& op : binary_defs()) {
        cases.push_back(binary_case(op, DType::F32, {67, 3, 2, 1}, DType::F32, {67, 3, 2, 1}, "same"));
        cases.push_back(binary_case(op, DType::F32, {13, 6, 4, 3}, DType::F32, {13, 3, 2, 1}, "bcast123"));
        cases.push_back(binary_case(op, DType::F32, {13, 7, 3, 1}, DType::F32, {1, 7, 1, 1}, "bcast0"));
        cases.push_back(binary_case(op, DType::F32, {67, 5, 1, 1}, DType::F16, {67, 1, 1, 1}, "row"));
        cases.push_back(binary_case(op, DType::F16, {33, 7, 2, 1}, DType::F32, {33, 7, 1, 1}, "bcast2"));
        cases.push_back(binary_case(op, DType::BF16, {33, 7, 2, 1}, DType::F16, {33, 1, 2, 1}, "bcast1"));
        // Rows wider than the CPU's 256-float conversion chunks, b repeated along them.
        cases.push_back(binary_case(op, DType::F16, {300, 5, 2, 1}, DType::BF16, {3, 5, 1, 1}, "bcast0_wide"));
        // Even row lengths: a GPU moves two elements per load or store.
        cases.push_back(binary_case(op, DType::F16, {64, 3, 2, 1}, DType::F16, {64, 3, 2, 1}, "pairs"));
        cases.push_back(binary_case(op, DType::BF16, {64, 5, 1, 1}, DType::BF16, {64, 1, 1, 1}, "row_pairs"));
        cases.push_back(binary_case(op, DType::F32, {32, 4, 1, 1}, DType::F32, {1, 4, 1, 1}, "bcast0_pairs"));
        // Rows of a multiple of eight 16-bit floats: a GPU moves eight per load or store (the
        // "pairs" cases above too), here with one element of b broadcast and f16 mixed with bf16.
        cases.push_back(binary_case(op, DType::BF16, {40, 4, 1, 1}, DType::BF16, {1, 4, 1, 1}, "bcast0_octets"));
        cases.push_back(binary_case(op, DType::F16, {2056, 3, 1, 1}, DType::BF16, {2056, 3, 1, 1}, "octets_mixed"));
    }
}

// Binary ops reading non-contiguous views.
void add_binary_view_cases(std::vector<OpCase>& cases) {
    const auto plus = [](double a, double b) { return a + b; };
    const auto minus = [](double a, double b) { return a - b; };
    const auto times = [](double a, double b) { return a * b; };
    cases.push_back({"add_transposed_a",
                     [](CaseBuilder& b) {
                         Tensor* x = b.input(DType::F32, {5, 13, 1, 1});
                         Tensor* y = b.input(DType::F32, {13, 1, 1, 1});
                         return xb::add(b.ctx(), xb::transpose(b.ctx(), x), y);
                     },
                     [=](const std::vector<RefArray>& in) { return exact::binary(exact::transpose(in[0]), in[1], plus); },
                     kTolF32});
    cases.push_back({"sub_permuted_b",
                     [](CaseBuilder& b) {
                         Tensor* x = b.input(DType::F32, {13, 5, 2, 1});
                         Tensor* y = b.input(DType::F16, {2, 13, 5, 1});
                         return xb::sub(b.ctx(), x, xb::permute(b.ctx(), y, {2, 0, 1, 3}));
                     },
                     [=](const std::vector<RefArray>& in) {
                         return exact::binary(in[0], exact::permute(in[1], {2, 0, 1, 3}), minus);
                     },
                     kTolF32});
    // A [13, 7] window at (2, 1) of a [16, 9] matrix times a row.
    cases.push_back(
        {"mul_view_offset",
         [](CaseBuilder& b) {
             Tensor* x = b.input(DType::F32, {16, 9, 1, 1});
             Tensor* y = b.input(DType::F32, {13, 1, 1, 1});
             Tensor* w = xb::view_2d(b.ctx(), x, 13, 7, x->nb[1], 2 * x->nb[0] + 1 * x->nb[1]);
             return xb::mul(b.ctx(), w, y);
         },
         [=](const std::vector<RefArray>& in) {
             return exact::binary(exact::strided_view(in[0], {13, 7, 1, 1}, {1, 16, 112, 112}, 2 + 16), in[1], times);
         },
         kTolF32});
}

// --- add1, scale, sqr, sqrt, log, clamp ----------------------------------------------------------

// op(a) for a of `type` and shape ne, with values from `gen`.
OpCase map_case(const std::string& name, DType type, Shape ne, Generator gen, Tensor* (*build)(xb::Context&, Tensor*),
                std::function<double(double)> f) {
    return {name + "_" + type_tag(type), [=](CaseBuilder& b) { return build(b.ctx(), b.input(type, ne, gen)); },
            [=](const std::vector<RefArray>& in) { return exact::map(in[0], f); }, tolerance_for_output(type)};
}

void add_map_cases(std::vector<OpCase>& cases) {
    const Shape ne{67, 5, 3, 1};
    for (DType t : kFloatTypes) {
        cases.push_back(map_case("sqr", t, ne, uniform(-2.0f, 2.0f), xb::sqr, [](double x) { return x * x; }));
        cases.push_back(map_case("sqrt", t, ne, uniform(0.05f, 4.0f), xb::sqrt, [](double x) { return std::sqrt(x); }));
        cases.push_back(map_case("log", t, ne, uniform(0.05f, 4.0f), xb::log, [](double x) { return std::log(x); }));
        // An even row length: a GPU moves two elements per load or store.
        cases.push_back(map_case("sqr_pairs", t, {128, 3, 1, 1}, uniform(-2.0f, 2.0f), xb::sqr,
                                 [](double x) { return x * x; }));
    }
    for (DType t : kFloatTypes) {
        constexpr float s = 0.75f, bias = -0.25f;
        cases.push_back(
            {"scale_" + type_tag(t), [=](CaseBuilder& b) { return xb::scale(b.ctx(), b.input(t, ne), s, bias); },
             [=](const std::vector<RefArray>& in) { return exact::map(in[0], [=](double x) { return x * s + bias; }); },
             tolerance_for_output(t)});
        constexpr float lo = -0.5f, hi = 0.75f;
        cases.push_back(
            {"clamp_" + type_tag(t),
             [=](CaseBuilder& b) { return xb::clamp(b.ctx(), b.input(t, ne, uniform(-2.0f, 2.0f)), lo, hi); },
             [=](const std::vector<RefArray>& in) {
                 return exact::map(in[0], [=](double x) { return std::clamp(x, double{lo}, double{hi}); });
             },
             tolerance_for_output(t)});
    }
    for (DType scalar_type : {DType::F32, DType::F16}) {
        for (DType t : {DType::F32, DType::F16}) {
            cases.push_back({"add1_" + type_tag(t) + "_" + type_tag(scalar_type),
                             [=](CaseBuilder& b) {
                                 Tensor* x = b.input(t, {13, 7, 2, 1});
                                 return xb::add1(b.ctx(), x, b.input(scalar_type, {1, 1, 1, 1}));
                             },
                             [](const std::vector<RefArray>& in) {
                                 return exact::binary(in[0], in[1], [](double a, double s) { return a + s; });
                             },
                             tolerance_for_output(t)});
        }
    }
}

// --- unary activations ---------------------------------------------------------------------------

void add_unary_cases(std::vector<OpCase>& cases) {
    for (int i = 0; i < xb::kUnaryOpCount; ++i) {
        const auto op = static_cast<xb::UnaryOp>(i);
        for (DType t : kFloatTypes) {
            cases.push_back({std::string(xb::unary_op_name(op)) + "_" + type_tag(t),
                             [=](CaseBuilder& b) {
                                 return xb::unary(b.ctx(), b.input(t, {67, 5, 3, 1}, uniform(-3.0f, 3.0f)), op);
                             },
                             [=](const std::vector<RefArray>& in) {
                                 return exact::map(in[0], [op](double x) { return exact::unary(op, x); });
                             },
                             tolerance_for_output(t)});
        }
    }
    // Softplus beyond its cut at 20 and far below 0, where log(1 + exp(x)) must not round to 0.
    cases.push_back({"softplus_wide_f32",
                     [](CaseBuilder& b) { return xb::softplus(b.ctx(), b.input(DType::F32, {67, 5, 1, 1}, uniform(-40.0f, 40.0f))); },
                     [](const std::vector<RefArray>& in) { return exact::map(in[0], [](double x) { return exact::softplus(x); }); },
                     kTolF32});
    for (DType t : {DType::F16, DType::BF16}) {  // rows of eight 16-bit floats per GPU load, over two segments
        cases.push_back({"silu_octets_" + type_tag(t),
                         [=](CaseBuilder& b) { return xb::silu(b.ctx(), b.input(t, {2056, 3, 1, 1}, uniform(-3.0f, 3.0f))); },
                         [](const std::vector<RefArray>& in) { return exact::map(in[0], exact::silu); },
                         tolerance_for_output(t)});
    }
    cases.push_back({"gelu_wide_f16",  // rows wider than the CPU's 256-float conversion chunks
                     [](CaseBuilder& b) {
                         return xb::gelu(b.ctx(), b.input(DType::F16, {601, 3, 1, 1}, uniform(-3.0f, 3.0f)));
                     },
                     [](const std::vector<RefArray>& in) { return exact::map(in[0], exact::gelu); },
                     tolerance_for_output(DType::F16)});
    cases.push_back({"silu_permuted",
                     [](CaseBuilder& b) {
                         Tensor* x = b.input(DType::F32, {7, 13, 3, 1}, uniform(-3.0f, 3.0f));
                         return xb::silu(b.ctx(), xb::permute(b.ctx(), x, {1, 2, 0, 3}));
                     },
                     [](const std::vector<RefArray>& in) {
                         return exact::map(exact::permute(in[0], {1, 2, 0, 3}), exact::silu);
                     },
                     kTolF32});
}

// --- gated linear units --------------------------------------------------------------------------

void add_glu_cases(std::vector<OpCase>& cases) {
    for (xb::GluOp op : {xb::GluOp::SwiGlu, xb::GluOp::GeGlu}) {
        const std::string name = xb::glu_op_name(op);
        for (DType t : {DType::F32, DType::F16}) {
            for (bool swapped : {false, true}) {
                cases.push_back(
                    {name + (swapped ? "_swapped_" : "_") + type_tag(t),
                     [=](CaseBuilder& b) {
                         return xb::glu(b.ctx(), b.input(t, {66, 5, 2, 1}, uniform(-3.0f, 3.0f)), op, swapped);
                     },
                     [=](const std::vector<RefArray>& in) { return exact::glu(in[0], op, swapped); },
                     tolerance_for_output(t)});
            }
        }
        for (DType t : kFloatTypes) {
            cases.push_back({name + "_split_" + type_tag(t),
                             [=](CaseBuilder& b) {
                                 Tensor* x = b.input(t, {33, 7, 2, 1}, uniform(-3.0f, 3.0f));
                                 return xb::glu_split(b.ctx(), x, b.input(t, {33, 7, 2, 1}), op);
                             },
                             [=](const std::vector<RefArray>& in) { return exact::glu_split(in[0], in[1], op); },
                             tolerance_for_output(t)});
        }
    }
    // Even halves: a GPU moves two elements per load or store.
    for (DType t : kFloatTypes) {
        for (bool swapped : {false, true}) {
            cases.push_back({std::string("swiglu_pairs") + (swapped ? "_swapped_" : "_") + type_tag(t),
                             [=](CaseBuilder& b) {
                                 return xb::glu(b.ctx(), b.input(t, {128, 3, 2, 1}, uniform(-3.0f, 3.0f)),
                                                xb::GluOp::SwiGlu, swapped);
                             },
                             [=](const std::vector<RefArray>& in) { return exact::glu(in[0], xb::GluOp::SwiGlu, swapped); },
                             tolerance_for_output(t)});
        }
        cases.push_back({"geglu_split_pairs_" + type_tag(t),
                         [=](CaseBuilder& b) {
                             Tensor* x = b.input(t, {64, 3, 1, 1}, uniform(-3.0f, 3.0f));
                             return xb::glu_split(b.ctx(), x, b.input(t, {64, 3, 1, 1}), xb::GluOp::GeGlu);
                         },
                         [=](const std::vector<RefArray>& in) { return exact::glu_split(in[0], in[1], xb::GluOp::GeGlu); },
                         tolerance_for_output(t)});
    }
    cases.push_back({"swiglu_shorthand",
                     [](CaseBuilder& b) {
                         return xb::swiglu(b.ctx(), b.input(DType::F32, {14, 3, 1, 1}));
                     },
                     [](const std::vector<RefArray>& in) { return exact::glu(in[0], xb::GluOp::SwiGlu, false); },
                     kTolF32});
    cases.push_back({"geglu_shorthand",
                     [](CaseBuilder& b) {
                         return xb::geglu(b.ctx(), b.input(DType::F32, {14, 3, 1, 1}));
                     },
                     [](const std::vector<RefArray>& in) { return exact::glu(in[0], xb::GluOp::GeGlu, false); },
                     kTolF32});
}

// gpt-oss's clamped SwiGLU (split halves only): values on both sides of the limit (|x| up to 2.3
// limit), so that both clamps bite; alpha 1.702 and limit 7 as the model uses them, and a small
// limit that clamps most values. A transposed gate half exercises non-packed rows.
void add_swiglu_oai_cases(std::vector<OpCase>& cases) {
    struct Def {
        const char* tag;
        float alpha, limit;
    };
    for (const Def d : {Def{"", 1.702f, 7.0f}, Def{"_small_limit", 0.5f, 1.5f}}) {
        for (DType t : kFloatTypes) {
            const float r = 2.3f * d.limit;
            cases.push_back({std::string("swiglu_oai") + d.tag + "_" + type_tag(t),
                             [=](CaseBuilder& b) {
                                 Tensor* x = b.input(t, {37, 5, 3, 1}, uniform(-r, r));
                                 return xb::swiglu_oai(b.ctx(), x, b.input(t, {37, 5, 3, 1}, uniform(-r, r)), d.alpha, d.limit);
                             },
                             [=](const std::vector<RefArray>& in) { return exact::swiglu_oai(in[0], in[1], d.alpha, d.limit); },
                             tolerance_for_output(t)});
        }
    }
    cases.push_back({"swiglu_oai_transposed_f32",
                     [](CaseBuilder& b) {
                         Tensor* x = b.input(DType::F32, {9, 11, 1, 1}, uniform(-16.0f, 16.0f));
                         Tensor* g = xb::transpose(b.ctx(), b.input(DType::F32, {11, 9, 1, 1}, uniform(-16.0f, 16.0f)));
                         return xb::swiglu_oai(b.ctx(), x, g, 1.702f, 7.0f);
                     },
                     [](const std::vector<RefArray>& in) { return exact::swiglu_oai(in[0], exact::transpose(in[1]), 1.702, 7.0); },
                     kTolF32});
    cases.push_back({"swiglu_oai_permuted_f32",
                     [](CaseBuilder& b) {
                         Tensor* x = xb::permute(b.ctx(), b.input(DType::F32, {13, 3, 4, 1}, uniform(-16.0f, 16.0f)), {0, 2, 1, 3});
                         Tensor* g = xb::permute(b.ctx(), b.input(DType::F32, {13, 3, 4, 1}, uniform(-16.0f, 16.0f)), {0, 2, 1, 3});
                         return xb::swiglu_oai(b.ctx(), x, g, 1.702f, 7.0f);
                     },
                     [](const std::vector<RefArray>& in) {
                         return exact::swiglu_oai(exact::permute(in[0], {0, 2, 1, 3}), exact::permute(in[1], {0, 2, 1, 3}), 1.702, 7.0);
                     },
                     kTolF32});
}

}  // namespace

std::vector<OpCase> elementwise_cases() {
    std::vector<OpCase> cases;
    add_binary_cases(cases);
    add_binary_view_cases(cases);
    add_map_cases(cases);
    add_unary_cases(cases);
    add_glu_cases(cases);
    add_swiglu_oai_cases(cases);
    return cases;
}


}  // namespace xb::opcheck
