// Op cases of the matrix products: mul_mat (types of a, broadcasting over dims 2 and 3, strided
// and permuted operands, odd sizes, gemv) and out_prod.
#include <algorithm>

#include "opcheck/cases.hpp"
#include "exact/ops.hpp"

namespace xb::opcheck {

namespace {

using xb::DType;
using xb::Tensor;

// Products accumulated in f32 over K <= 67: errors ~sqrt(K) ulp of the dot products, NMSE ~1e-13.
constexpr double kTolMatMulF32 = kTolF32Reduce;

RefArray mul_mat_ref(const std::vector<RefArray>& in) { return exact::mul_mat(in[0], in[1]); }
RefArray out_prod_ref(const std::vector<RefArray>& in) { return exact::out_prod(in[0], in[1]); }

// mul_mat of contiguous a (type ta, [k, m, a2, a3]) and b (type tb, [k, n, b2, b3]).
OpCase mul_mat_case(const std::string& name, DType ta, Shape a, DType tb, Shape b) {
    return {"mul_mat_" + name + "_" + type_tag(ta) + (tb == DType::F32 ? "" : "_b_" + type_tag(tb)),
            [=](CaseBuilder& c) {
                Tensor* x = c.input(ta, a);
                return xb::mul_mat(c.ctx(), x, c.input(tb, b));
            },
            mul_mat_ref, std::max(matmul_tolerance(ta), matmul_tolerance(tb))};
}

void add_mul_mat_cases(std::vector<OpCase>& cases) {
    for (DType t : {DType::F32, DType::F16, DType::BF16}) {
        cases.push_back(mul_mat_case("67x13x7", t, {67, 13, 1, 1}, DType::F32, {67, 7, 1, 1}));
        cases.push_back(mul_mat_case("gemv", t, {67, 29, 1, 1}, DType::F32, {67, 1, 1, 1}));
        cases.push_back(mul_mat_case("bcast23", t, {33, 9, 2, 3}, DType::F32, {33, 5, 4, 3}));
    }
    // Rows 16-byte aligned: the GPU's mat-vec kernel reads eight 16-bit weights at a time (K = 264),
    // over broadcast batches, and with a tail past the last eight (a window of 260 of 272 columns).
    for (DType t : {DType::F16, DType::BF16}) {
        cases.push_back(mul_mat_case("gemv_k264", t, {264, 29, 1, 1}, DType::F32, {264, 1, 1, 1}));
        cases.push_back(mul_mat_case("gemv_k264_bcast", t, {264, 9, 2, 1}, DType::F32, {264, 1, 4, 3}));
        cases.push_back({"mul_mat_gemv_tail_" + type_tag(t),
                         [=](CaseBuilder& c) {
                             Tensor* wide = c.input(t, {272, 21, 1, 1});
                             Tensor* a = xb::view_2d(c.ctx(), wide, 260, 21, wide->nb[1], 0);
                             Tensor* x = c.input(DType::F32, {272, 1, 1, 1});
                             return xb::mul_mat(c.ctx(), a, xb::view_1d(c.ctx(), x, 260, 0));
                         },
                         [](const std::vector<RefArray>& in) {
                             return exact::mul_mat(exact::strided_view(in[0], {260, 21, 1, 1}, {1, 272, 5712, 5712}, 0),
                                                 exact::strided_view(in[1], {260, 1, 1, 1}, {1, 272, 272, 272}, 0));
                         },
                         matmul_tolerance(t)});
    }
    cases.push_back(mul_mat_case("bcast3", DType::F32, {33, 9, 1, 1}, DType::F32, {33, 5, 2, 3}));
    cases.push_back(mul_mat_case("gemv_bcast", DType::F16, {33, 9, 2, 1}, DType::F32, {33, 1, 4, 3}));
    cases.push_back(mul_mat_case("64x64x67", DType::F32, {67, 64, 1, 1}, DType::F32, {67, 64, 1, 1}));
    cases.push_back(mul_mat_case("64x64x67", DType::F16, {67, 64, 1, 1}, DType::F32, {67, 64, 1, 1}));
    // K a multiple of the SIMD width: rows can be read in place.
    cases.push_back(mul_mat_case("k64_batched", DType::F32, {64, 33, 2, 1}, DType::F32, {64, 17, 2, 1}));
    cases.push_back(mul_mat_case("k1", DType::F32, {1, 5, 1, 1}, DType::F32, {1, 3, 1, 1}));
    cases.push_back(mul_mat_case("33x9x5", DType::F16, {33, 9, 1, 1}, DType::F16, {33, 5, 1, 1}));

    // More than 32 columns of b: the CPU's packed outer-product path. K = 1601 spans two or more
    // chunks along K for every instruction set, M = 150 two blocks of rows with a partial tile, and
    // N = 37 a partial group of columns.
    for (DType t : {DType::F32, DType::F16, DType::BF16}) {
        cases.push_back(mul_mat_case("packed_150x37x1601", t, {1601, 150, 1, 1}, DType::F32, {1601, 37, 1, 1}));
    }
    cases.push_back(mul_mat_case("packed_bcast23", DType::F32, {70, 40, 2, 3}, DType::F32, {70, 36, 4, 3}));
    cases.push_back(mul_mat_case("packed", DType::F32, {64, 48, 1, 1}, DType::F16, {64, 41, 1, 1}));
    cases.push_back({"mul_mat_packed_strided_both_f32",
                     [](CaseBuilder& c) {
                         Tensor* a = xb::transpose(c.ctx(), c.input(DType::F32, {45, 51, 1, 1}));
                         Tensor* wide = c.input(DType::F32, {55, 40, 1, 1});
                         return xb::mul_mat(c.ctx(), a, xb::view_2d(c.ctx(), wide, 51, 40, wide->nb[1], 2 * wide->nb[0]));
                     },
                     [](const std::vector<RefArray>& in) {
                         return exact::mul_mat(exact::transpose(in[0]),
                                             exact::strided_view(in[1], {51, 40, 1, 1}, {1, 55, 2200, 2200}, 2));
                     },
                     kTolMatMulF32});
    cases.push_back({"mul_mat_transposed_b_f32",
                     [](CaseBuilder& c) {
                         Tensor* a = c.input(DType::F32, {67, 13, 1, 1});
                         return xb::mul_mat(c.ctx(), a, xb::transpose(c.ctx(), c.input(DType::F32, {7, 67, 1, 1})));
                     },
                     [](const std::vector<RefArray>& in) { return exact::mul_mat(in[0], exact::transpose(in[1])); },
                     kTolMatMulF32});
    cases.push_back({"mul_mat_permuted_a_f16",
                     [](CaseBuilder& c) {
                         Tensor* a = xb::permute(c.ctx(), c.input(DType::F16, {33, 2, 9, 1}), {0, 2, 1, 3});
                         return xb::mul_mat(c.ctx(), a, c.input(DType::F32, {33, 5, 2, 1}));
                     },
                     [](const std::vector<RefArray>& in) {
                         return exact::mul_mat(exact::permute(in[0], {0, 2, 1, 3}), in[1]);
                     },
                     kTolMatMulF16});
    // Both operands strided: a transposed (elements of a row apart), b a window of a wider matrix.
    cases.push_back(
        {"mul_mat_strided_both_f32",
         [](CaseBuilder& c) {
             Tensor* a = xb::transpose(c.ctx(), c.input(DType::F32, {11, 21, 1, 1}));
             Tensor* wide = c.input(DType::F32, {25, 6, 1, 1});
             return xb::mul_mat(c.ctx(), a, xb::view_2d(c.ctx(), wide, 21, 6, wide->nb[1], 2 * wide->nb[0]));
         },
         [](const std::vector<RefArray>& in) {
             return exact::mul_mat(exact::transpose(in[0]), exact::strided_view(in[1], {21, 6, 1, 1}, {1, 25, 150, 150}, 2));
         },
         kTolMatMulF32});
}

void add_out_prod_cases(std::vector<OpCase>& cases) {
    for (DType t : {DType::F32, DType::F16}) {
        cases.push_back({"out_prod_" + type_tag(t),
                         [=](CaseBuilder& c) {
                             Tensor* a = c.input(t, {13, 9, 1, 1});
                             return xb::out_prod(c.ctx(), a, c.input(DType::F32, {7, 9, 1, 1}));
                         },
                         out_prod_ref, matmul_tolerance(t)});
        cases.push_back({"out_prod_bcast23_" + type_tag(t),
                         [=](CaseBuilder& c) {
                             Tensor* a = c.input(t, {13, 9, 2, 1});
                             return xb::out_prod(c.ctx(), a, c.input(DType::F32, {7, 9, 4, 3}));
                         },
                         out_prod_ref, matmul_tolerance(t)});
    }
    cases.push_back({"out_prod_transposed_b_f32",
                     [](CaseBuilder& c) {
                         Tensor* a = c.input(DType::F32, {13, 33, 1, 1});
                         return xb::out_prod(c.ctx(), a, xb::transpose(c.ctx(), c.input(DType::F32, {33, 7, 1, 1})));
                     },
                     [](const std::vector<RefArray>& in) { return exact::out_prod(in[0], exact::transpose(in[1])); },
                     kTolMatMulF32});
}

}  // namespace

std::vector<OpCase> matmul_cases() {
    std::vector<OpCase> cases;
    add_mul_mat_cases(cases);
    add_out_prod_cases(cases);
    return cases;
}


}  // namespace xb::opcheck
