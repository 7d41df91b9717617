// Op cases of the reductions and normalisations: sum, sum_rows, mean, argmax, argsort and top_k,
// norm, rms_norm, l2_norm.
#include <algorithm>
#include <limits>
#include <random>
#include <string>

#include "opcheck/cases.hpp"
#include "exact/ops.hpp"

namespace xb::opcheck {

namespace {

using xb::DType;
using xb::Tensor;

constexpr DType kFloatTypes[] = {DType::F32, DType::F16, DType::BF16};

// Reductions accumulate in f32 and store in `type`: the larger of the two errors.
double reduce_tolerance(DType type) { return type == DType::F32 ? kTolF32Reduce : tolerance_for_output(type); }

// op(input of type t, shape ne) compared with reference(in[0]).
OpCase unary_reduce_case(const std::string& name, DType t, Shape ne, Generator gen,
                         Tensor* (*build)(xb::Context&, Tensor*), RefArray (*reference)(const RefArray&),
                         double tolerance) {
    return {name + "_" + type_tag(t), [=](CaseBuilder& b) { return build(b.ctx(), b.input(t, ne, gen)); },
            [=](const std::vector<RefArray>& in) { return reference(in[0]); }, tolerance};
}

void add_sum_cases(std::vector<OpCase>& cases) {
    // Values biased positive so that totals stay well away from zero (NMSE is relative to them).
    const Generator biased = uniform(-0.5f, 1.0f);
    for (DType t : kFloatTypes) {
        cases.push_back(unary_reduce_case("sum", t, {67, 5, 3, 1}, biased, xb::sum, exact::sum, kTolF32Reduce));
        // sum_rows keeps the input type; mean is always f32.
        cases.push_back(
            unary_reduce_case("sum_rows", t, {67, 5, 3, 2}, biased, xb::sum_rows, exact::sum_rows, reduce_tolerance(t)));
        cases.push_back(unary_reduce_case("mean", t, {67, 5, 3, 2}, biased, xb::mean, exact::mean, kTolF32Reduce));
    }
    cases.push_back({"sum_rows_transposed_f32",
                     [](CaseBuilder& b) {
                         return xb::sum_rows(
                             b.ctx(), xb::transpose(b.ctx(), b.input(DType::F32, {7, 33, 2, 1}, uniform(-0.5f, 1.0f))));
                     },
                     [](const std::vector<RefArray>& in) { return exact::sum_rows(exact::transpose(in[0])); },
                     kTolF32Reduce});
    cases.push_back(
        {"sum_permuted_f32",
         [](CaseBuilder& b) {
             return xb::sum(
                 b.ctx(), xb::permute(b.ctx(), b.input(DType::F32, {7, 13, 3, 1}, uniform(-0.5f, 1.0f)), {2, 0, 1, 3}));
         },
         [](const std::vector<RefArray>& in) {
             return exact::sum(exact::permute(in[0], {2, 0, 1, 3}));
         },
         kTolF32Reduce});
}

void add_argmax_cases(std::vector<OpCase>& cases) {
    // The index of the first maximum of each row: exact.
    cases.push_back(unary_reduce_case("argmax", DType::F32, {67, 13, 1, 1}, uniform(-1.0f, 1.0f), xb::argmax,
                                      exact::argmax, kTolExact));
    cases.push_back(unary_reduce_case("argmax", DType::F16, {33, 9, 1, 1}, uniform(-1.0f, 1.0f), xb::argmax,
                                      exact::argmax, kTolExact));
    cases.push_back({"argmax_transposed_f32",
                     [](CaseBuilder& b) {
                         return xb::argmax(b.ctx(), xb::transpose(b.ctx(), b.input(DType::F32, {9, 21, 1, 1})));
                     },
                     [](const std::vector<RefArray>& in) { return exact::argmax(exact::transpose(in[0])); }, kTolExact});
}

// Values from a few levels ((i + 0.5) / 4 for i in [-4, 4), never zero), so that rows hold many
// ties; with `nan_every` > 0, about one value in nan_every is NaN.
Generator tied_levels(int nan_every) {
    return [nan_every](const Shape& ne, std::mt19937& rng) {
        std::uniform_int_distribution<int> level(-4, 3);
        std::uniform_int_distribution<int> pick(0, std::max(nan_every, 1) - 1);
        std::vector<float> v(static_cast<size_t>(ne[0] * ne[1] * ne[2] * ne[3]));
        for (float& x : v) {
            x = (static_cast<float>(level(rng)) + 0.5f) / 4.0f;
            if (nan_every > 0 && pick(rng) == 0) x = std::numeric_limits<float>::quiet_NaN();
        }
        return v;
    };
}

// The first k entries of each row of the descending argsort: top_k's reference.
RefArray top_k_ref(const RefArray& a, int64_t k) {
    const RefArray order = exact::argsort(a, xb::SortOrder::Descending);
    RefArray out({k, a.ne()[1], a.ne()[2], a.ne()[3]});
    for_each_index(out.ne(), [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) { out.at(i0, i1, i2, i3) = order.at(i0, i1, i2, i3); });
    return out;
}

// argsort and top_k: indices, exact. Distinct values, ties (equal values in index order) and NaN
// (after every number in both orders); odd row lengths, a transposed input and f16.
void add_argsort_cases(std::vector<OpCase>& cases) {
    using xb::SortOrder;
    for (SortOrder order : {SortOrder::Ascending, SortOrder::Descending}) {
        const std::string tag = order == SortOrder::Ascending ? "_asc" : "_desc";
        struct Def {
            std::string name;
            DType t;
            Shape ne;
            Generator gen;
        };
        const Def defs[] = {{"argsort" + tag, DType::F32, {37, 5, 3, 1}, uniform(-1.0f, 1.0f)},
                            {"argsort_ties" + tag, DType::F32, {33, 7, 1, 1}, tied_levels(0)},
                            {"argsort_nan" + tag, DType::F32, {29, 9, 1, 1}, tied_levels(5)},
                            {"argsort" + tag, DType::F16, {19, 4, 2, 1}, tied_levels(7)},
                            {"argsort_long" + tag, DType::F32, {1025, 3, 1, 1}, uniform(-1.0f, 1.0f)}};
        for (const Def& d : defs) {
            cases.push_back({d.name + (d.t == DType::F32 ? "" : "_" + type_tag(d.t)),
                             [=](CaseBuilder& b) { return xb::argsort(b.ctx(), b.input(d.t, d.ne, d.gen), order); },
                             [=](const std::vector<RefArray>& in) { return exact::argsort(in[0], order); }, kTolExact});
        }
        cases.push_back({"argsort_transposed" + tag,
                         [=](CaseBuilder& b) {
                             return xb::argsort(b.ctx(), xb::transpose(b.ctx(), b.input(DType::F32, {7, 23, 1, 1}, tied_levels(6))),
                                                order);
                         },
                         [=](const std::vector<RefArray>& in) { return exact::argsort(exact::transpose(in[0]), order); },
                         kTolExact});
    }
    // top_k: a view of the argsort's first k columns (made contiguous to compare), with ties and NaN.
    for (int k : {1, 4, 8}) {
        cases.push_back({"top_k_" + std::to_string(k),
                         [=](CaseBuilder& b) {
                             return xb::cont(b.ctx(), xb::top_k(b.ctx(), b.input(DType::F32, {8 + k, 6, 2, 1}, tied_levels(4)), k));
                         },
                         [=](const std::vector<RefArray>& in) { return top_k_ref(in[0], k); }, kTolExact});
    }
}

void add_norm_cases(std::vector<OpCase>& cases) {
    for (DType t : kFloatTypes) {
        for (float eps : {1e-5f, 1e-2f}) {
            const std::string suffix = eps < 1e-3f ? "" : "_big_eps";
            cases.push_back({"norm" + suffix + "_" + type_tag(t),
                             [=](CaseBuilder& b) {
                                 return xb::norm(b.ctx(), b.input(t, {67, 5, 3, 1}, uniform(-2.0f, 3.0f)), eps);
                             },
                             [=](const std::vector<RefArray>& in) { return exact::norm(in[0], eps); },
                             reduce_tolerance(t)});
            cases.push_back({"rms_norm" + suffix + "_" + type_tag(t),
                             [=](CaseBuilder& b) {
                                 return xb::rms_norm(b.ctx(), b.input(t, {67, 5, 3, 1}), eps);
                             },
                             [=](const std::vector<RefArray>& in) { return exact::rms_norm(in[0], eps); },
                             reduce_tolerance(t)});
        }
        cases.push_back({"l2_norm_" + type_tag(t),
                         [=](CaseBuilder& b) { return xb::l2_norm(b.ctx(), b.input(t, {67, 5, 3, 1}, uniform(-2.0f, 3.0f)), 1e-6f); },
                         [=](const std::vector<RefArray>& in) { return exact::l2_norm(in[0], 1e-6); }, reduce_tolerance(t)});
    }
    // Rows shorter than eps: divided by eps, not by their length.
    cases.push_back({"l2_norm_below_eps_f32",
                     [](CaseBuilder& b) { return xb::l2_norm(b.ctx(), b.input(DType::F32, {9, 4, 1, 1}, uniform(-1e-3f, 1e-3f)), 0.01f); },
                     [](const std::vector<RefArray>& in) { return exact::l2_norm(in[0], 0.01); }, kTolF32Reduce});
    constexpr float eps = 1e-6f;
    cases.push_back({"l2_norm_permuted_f32",
                     [](CaseBuilder& b) {
                         return xb::l2_norm(b.ctx(), xb::permute(b.ctx(), b.input(DType::F32, {5, 33, 3, 1}), {1, 0, 2, 3}), eps);
                     },
                     [](const std::vector<RefArray>& in) { return exact::l2_norm(exact::permute(in[0], {1, 0, 2, 3}), eps); },
                     kTolF32Reduce});
    cases.push_back(
        {"rms_norm_permuted_f32",
         [](CaseBuilder& b) {
             return xb::rms_norm(b.ctx(), xb::permute(b.ctx(), b.input(DType::F32, {5, 33, 3, 1}), {1, 0, 2, 3}), eps);
         },
         [](const std::vector<RefArray>& in) {
             return exact::rms_norm(exact::permute(in[0], {1, 0, 2, 3}), eps);
         },
         kTolF32Reduce});
    cases.push_back({"norm_view_f32",
                     [](CaseBuilder& b) {
                         Tensor* x = b.input(DType::F32, {40, 6, 1, 1});
                         return xb::norm(b.ctx(), xb::view_2d(b.ctx(), x, 33, 6, x->nb[1], 3 * x->nb[0]), eps);
                     },
                     [](const std::vector<RefArray>& in) {
                         return exact::norm(exact::strided_view(in[0], {33, 6, 1, 1}, {1, 40, 240, 240}, 3), eps);
                     },
                     kTolF32Reduce});
}

}  // namespace

std::vector<OpCase> reduce_cases() {
    std::vector<OpCase> cases;
    add_sum_cases(cases);
    add_argmax_cases(cases);
    add_argsort_cases(cases);
    add_norm_cases(cases);
    return cases;
}


}  // namespace xb::opcheck
