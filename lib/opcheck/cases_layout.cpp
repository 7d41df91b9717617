// Op cases of the copy and layout ops: dup, cont, cpy and cast (with type conversion), reshape,
// view, permute and transpose (as inputs of computing ops), repeat, concat, pad, arange, get_rows
// and set_rows.
#include <tuple>

#include "opcheck/cases.hpp"
#include "exact/ops.hpp"

namespace xb::opcheck {

namespace {

using xb::DType;
using xb::Tensor;

constexpr DType kFloatTypes[] = {DType::F32, DType::F16, DType::BF16};

// The tolerance of a copy from `src` to `dst`: exact into f32 or the same type; otherwise the values
// are rounded to dst (bf16 -> f16 too: bf16's range reaches below f16's subnormals).
double copy_tolerance(DType src, DType dst) {
    const bool rounds = src != dst && dst != DType::F32;
    return rounds ? tolerance_for_output(dst) : kTolExact;
}

RefArray identity(const std::vector<RefArray>& in) { return in[0]; }

// --- dup, cont, cpy, cast ------------------------------------------------------------------------

void add_dup_cont_cases(std::vector<OpCase>& cases) {
    for (DType t : kFloatTypes) {
        cases.push_back({"dup_" + type_tag(t),
                         [=](CaseBuilder& b) {
                             return xb::dup(b.ctx(), b.input(t, {13, 7, 3, 1}));
                         },
                         identity, kTolExact});
        cases.push_back({"cont_permuted_" + type_tag(t),
                         [=](CaseBuilder& b) {
                             return xb::cont(b.ctx(), xb::permute(b.ctx(), b.input(t, {13, 7, 3, 2}), {2, 0, 3, 1}));
                         },
                         [](const std::vector<RefArray>& in) {
                             return exact::permute(in[0], {2, 0, 3, 1});
                         },
                         kTolExact});
    }
    cases.push_back({"dup_transposed_f32",
                     [](CaseBuilder& b) {
                         return xb::dup(b.ctx(), xb::transpose(b.ctx(), b.input(DType::F32, {13, 7, 1, 1})));
                     },
                     [](const std::vector<RefArray>& in) { return exact::transpose(in[0]); }, kTolExact});
    // Several 32 x 32 tiles with short last ones, over dims 2 and 3 (a GPU's tiled transpose).
    cases.push_back({"cont_transposed_tiles_bf16",
                     [](CaseBuilder& b) {
                         return xb::cont(b.ctx(), xb::transpose(b.ctx(), b.input(DType::BF16, {45, 70, 3, 2})));
                     },
                     [](const std::vector<RefArray>& in) { return exact::transpose(in[0]); }, kTolExact});
    // A [5, 3, 2] block at (1, 2, 1) of a [9, 8, 4] tensor.
    cases.push_back(
        {"cont_view_offset_f16",
         [](CaseBuilder& b) {
             Tensor* x = b.input(DType::F16, {9, 8, 4, 1});
             const size_t offset = 1 * x->nb[0] + 2 * x->nb[1] + 1 * x->nb[2];
             return xb::cont(b.ctx(), xb::view(b.ctx(), x, {5, 3, 2, 1}, {x->nb[1], x->nb[2], x->nb[3]}, offset));
         },
         [](const std::vector<RefArray>& in) {
             return exact::strided_view(in[0], {5, 3, 2, 1}, {1, 9, 72, 288}, 1 + 2 * 9 + 72);
         },
         kTolExact});
}

void add_cpy_cases(std::vector<OpCase>& cases) {
    for (DType src : kFloatTypes) {
        for (DType dst : kFloatTypes) {
            cases.push_back({"cpy_" + type_tag(src) + "_" + type_tag(dst),
                             [=](CaseBuilder& b) {
                                 Tensor* x = b.input(src, {13, 7, 3, 1});
                                 return xb::cpy(b.ctx(), x, b.input(dst, {13, 7, 3, 1}));
                             },
                             identity, copy_tolerance(src, dst)});
        }
        cases.push_back({"cast_f32_" + type_tag(src),
                         [=](CaseBuilder& b) {
                             return xb::cast(b.ctx(), b.input(DType::F32, {67, 3, 1, 1}), src);
                         },
                         identity, copy_tolerance(DType::F32, src)});
    }
    // Even row lengths: a GPU moves two elements per load or store (bit for bit within one type).
    for (DType t : kFloatTypes) {
        cases.push_back({"cast_pairs_" + type_tag(t) + "_to_bf16",
                         [=](CaseBuilder& b) { return xb::cast(b.ctx(), b.input(t, {96, 4, 2, 1}), DType::BF16); },
                         identity, copy_tolerance(t, DType::BF16)});
        cases.push_back({"dup_pairs_" + type_tag(t),
                         [=](CaseBuilder& b) { return xb::dup(b.ctx(), b.input(t, {64, 3, 1, 1})); }, identity,
                         kTolExact});
    }
    // Equal element counts, different shapes: elements move in flat logical order.
    cases.push_back({"cpy_reshaping_f32_f16",
                     [](CaseBuilder& b) {
                         Tensor* x = b.input(DType::F32, {13, 7, 3, 1});
                         return xb::cpy(b.ctx(), x, b.input(DType::F16, {21, 13, 1, 1}));
                     },
                     [](const std::vector<RefArray>& in) {
                         return exact::reshape(in[0], {21, 13, 1, 1});
                     },
                     kTolF16});
    cases.push_back({"cpy_from_permuted_f16_f32",
                     [](CaseBuilder& b) {
                         Tensor* x = xb::permute(b.ctx(), b.input(DType::F16, {7, 13, 3, 1}), {1, 0, 2, 3});
                         return xb::cpy(b.ctx(), x, b.input(DType::F32, {13, 7, 3, 1}));
                     },
                     [](const std::vector<RefArray>& in) {
                         return exact::permute(in[0], {1, 0, 2, 3});
                     },
                     kTolExact});
    // Into a transposed view: the result (a view of dst) is read in its own logical order.
    cases.push_back({"cpy_into_transposed_f32",
                     [](CaseBuilder& b) {
                         Tensor* x = b.input(DType::F32, {7, 13, 1, 1});
                         Tensor* dst = b.input(DType::F32, {13, 7, 1, 1});
                         return xb::cpy(b.ctx(), x, xb::transpose(b.ctx(), dst));
                     },
                     identity, kTolExact});
}

// --- views feeding computing ops -----------------------------------------------------------------

void add_view_cases(std::vector<OpCase>& cases) {
    const auto plus = [](double a, double b) { return a + b; };
    cases.push_back({"reshape_add",
                     [](CaseBuilder& b) {
                         Tensor* x = b.input(DType::F32, {91, 3, 1, 1});
                         Tensor* y = b.input(DType::F32, {13, 7, 3, 1});
                         return xb::add(b.ctx(), xb::reshape(b.ctx(), x, {13, 7, 3, 1}), y);
                     },
                     [=](const std::vector<RefArray>& in) {
                         return exact::binary(exact::reshape(in[0], {13, 7, 3, 1}), in[1], plus);
                     },
                     kTolF32});
    cases.push_back({"view_1d_offset_add",
                     [](CaseBuilder& b) {
                         Tensor* x = b.input(DType::F32, {67, 2, 1, 1});
                         Tensor* y = b.input(DType::F32, {50, 1, 1, 1});
                         return xb::add(b.ctx(), xb::view_1d(b.ctx(), x, 50, 41 * x->nb[0]), y);
                     },
                     [=](const std::vector<RefArray>& in) {
                         return exact::binary(exact::strided_view(in[0], {50, 1, 1, 1}, {1, 50, 50, 50}, 41), in[1], plus);
                     },
                     kTolF32});
    // Every other row of a [13, 14] matrix, starting at row 1.
    cases.push_back({"view_2d_strided_rows_cont",
                     [](CaseBuilder& b) {
                         Tensor* x = b.input(DType::BF16, {13, 14, 1, 1});
                         return xb::cont(b.ctx(), xb::view_2d(b.ctx(), x, 13, 7, 2 * x->nb[1], x->nb[1]));
                     },
                     [](const std::vector<RefArray>& in) {
                         return exact::strided_view(in[0], {13, 7, 1, 1}, {1, 26, 182, 182}, 13);
                     },
                     kTolExact});
    cases.push_back(
        {"permute_mul",
         [](CaseBuilder& b) {
             Tensor* x = b.input(DType::F32, {3, 13, 2, 5});
             Tensor* y = b.input(DType::F32, {13, 2, 5, 3});
             return xb::mul(b.ctx(), xb::permute(b.ctx(), x, {3, 0, 1, 2}), y);
         },
         [](const std::vector<RefArray>& in) {
             return exact::binary(exact::permute(in[0], {3, 0, 1, 2}), in[1], [](double a, double b) { return a * b; });
         },
         kTolF32});
    cases.push_back({"transpose_of_permute_cont",
                     [](CaseBuilder& b) {
                         Tensor* x = b.input(DType::F16, {5, 7, 3, 2});
                         return xb::cont(b.ctx(), xb::transpose(b.ctx(), xb::permute(b.ctx(), x, {0, 2, 1, 3})));
                     },
                     [](const std::vector<RefArray>& in) {
                         return exact::transpose(exact::permute(in[0], {0, 2, 1, 3}));
                     },
                     kTolExact});
}

// --- repeat, concat, pad, arange ----------------------------------------------------------------

void add_shape_cases(std::vector<OpCase>& cases) {
    for (DType t : {DType::F32, DType::F16}) {
        cases.push_back({"repeat_" + type_tag(t),
                         [=](CaseBuilder& b) {
                             Tensor* x = b.input(t, {3, 1, 2, 1});
                             return xb::repeat(b.ctx(), x, b.input(t, {9, 4, 2, 3}));
                         },
                         [](const std::vector<RefArray>& in) {
                             return exact::repeat(in[0], {9, 4, 2, 3});
                         },
                         kTolExact});
    }
    for (int dim = 0; dim < 4; ++dim) {
        cases.push_back({"concat_dim" + std::to_string(dim) + "_f32",
                         [=](CaseBuilder& b) {
                             Shape nb{5, 3, 2, 2};
                             nb[static_cast<size_t>(dim)] = 4;
                             Tensor* x = b.input(DType::F32, {5, 3, 2, 2});
                             return xb::concat(b.ctx(), x, b.input(DType::F32, nb), dim);
                         },
                         [=](const std::vector<RefArray>& in) { return exact::concat(in[0], in[1], dim); }, kTolExact});
    }
    cases.push_back({"concat_dim1_f16_permuted",
                     [](CaseBuilder& b) {
                         Tensor* x = xb::transpose(b.ctx(), b.input(DType::F16, {3, 7, 1, 1}));
                         return xb::concat(b.ctx(), x, b.input(DType::F16, {7, 2, 1, 1}), 1);
                     },
                     [](const std::vector<RefArray>& in) { return exact::concat(exact::transpose(in[0]), in[1], 1); },
                     kTolExact});
    for (DType t : {DType::F32, DType::F16}) {
        cases.push_back({"pad_" + type_tag(t),
                         [=](CaseBuilder& b) {
                             return xb::pad(b.ctx(), b.input(t, {7, 5, 3, 1}), {2, 1, 0, 1});
                         },
                         [](const std::vector<RefArray>& in) {
                             return exact::pad(in[0], {2, 1, 0, 1});
                         },
                         kTolExact});
    }
    // start + i * step computed in f32: a few ulp of the largest value per element.
    for (const auto& range :
         {std::tuple{0.0f, 10.0f, 0.75f}, std::tuple{-3.0f, 5.0f, 0.25f}, std::tuple{4.0f, -2.5f, -0.5f}}) {
        const float start = std::get<0>(range), stop = std::get<1>(range), step = std::get<2>(range);  // captured below
        cases.push_back({"arange_" + std::to_string(static_cast<int>(exact::arange(start, stop, step).size())),
                         [=](CaseBuilder& b) { return xb::arange(b.ctx(), start, stop, step); },
                         [=](const std::vector<RefArray>&) { return exact::arange(start, stop, step); }, kTolF32});
    }
}

// --- get_rows, set_rows --------------------------------------------------------------------------

void add_row_cases(std::vector<OpCase>& cases) {
    for (DType t : kFloatTypes) {
        // a [13, 9, 2, 3], indices [5, 2, 3]: every (i2, i3) gathers its own rows.
        cases.push_back({"get_rows_" + type_tag(t),
                         [=](CaseBuilder& b) {
                             Tensor* a = b.input(t, {13, 9, 2, 3});
                             return xb::get_rows(b.ctx(), a, b.input(DType::I32, {5, 2, 3, 1}, random_indices(9)));
                         },
                         [](const std::vector<RefArray>& in) { return exact::get_rows(in[0], in[1]); }, kTolExact});
    }
    cases.push_back({"get_rows_f32_matrix",
                     [](CaseBuilder& b) {
                         Tensor* a = b.input(DType::F32, {67, 11, 1, 1});
                         return xb::get_rows(b.ctx(), a, b.input(DType::I32, {17, 1, 1, 1}, random_indices(11)));
                     },
                     [](const std::vector<RefArray>& in) { return exact::get_rows(in[0], in[1]); }, kTolExact});
    // dst [13, 9, n2, n3] <- src [13, 4, n2, n3] at indices [4, r2, r3] (broadcast when r < n).
    struct SetRowsDef {
        DType dst;
        DType index;
        Shape index_ne;
    };
    for (const SetRowsDef& d :
         {SetRowsDef{DType::F32, DType::I32, {4, 2, 3, 1}}, SetRowsDef{DType::F16, DType::I64, {4, 2, 3, 1}},
          SetRowsDef{DType::F32, DType::I64, {4, 1, 1, 1}}, SetRowsDef{DType::BF16, DType::I32, {4, 2, 1, 1}}}) {
        const bool broadcast = d.index_ne[1] * d.index_ne[2] < 6;
        cases.push_back({"set_rows_" + type_tag(d.dst) + "_" + type_tag(d.index) + (broadcast ? "_bcast" : ""),
                         [=](CaseBuilder& b) {
                             Tensor* dst = b.input(d.dst, {13, 9, 2, 3});
                             Tensor* src = b.input(DType::F32, {13, 4, 2, 3});
                             return xb::set_rows(b.ctx(), dst, src, b.input(d.index, d.index_ne, distinct_indices(9)));
                         },
                         [](const std::vector<RefArray>& in) { return exact::set_rows(in[0], in[1], in[2]); },
                         copy_tolerance(DType::F32, d.dst)});
    }
}

}  // namespace

std::vector<OpCase> layout_cases() {
    std::vector<OpCase> cases;
    add_dup_cont_cases(cases);
    add_cpy_cases(cases);
    add_view_cases(cases);
    add_shape_cases(cases);
    add_row_cases(cases);
    return cases;
}


}  // namespace xb::opcheck
