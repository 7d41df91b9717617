// Op cases of the quantized types: mul_mat with quantized weights (gemv, batches, broadcasting,
// permuted weights, strided activations), get_rows of quantized rows (embedding look-up), and
// copies into and out of the block formats.
//
// Rows of a quantized tensor are whole blocks: K is a multiple of the block (32, 64 or 256), so sizes
// are odd in blocks and in every other dimension instead. The read-only formats (iq1/iq2/iq3, nvfp4)
// get random valid blocks (the case runner) and no quantizing casts. The reference
// sees the weights as stored (dequantized), so only the backend's own arithmetic counts as error.
#include "core/quant.hpp"
#include "opcheck/cases.hpp"
#include "exact/ops.hpp"

namespace xb::opcheck {

namespace {

using xb::DType;
using xb::Tensor;

// Quantizing uniform [-1, 1] values: the format's rounding (core/quant.hpp). A quantizer that picks
// the wrong scale or drops a bit plane misses it by an order of magnitude.
double quantize_tolerance(DType t) { return quantization_nmse_bound(t); }

RefArray mul_mat_ref(const std::vector<RefArray>& in) { return exact::mul_mat(in[0], in[1]); }
RefArray identity(const std::vector<RefArray>& in) { return in[0]; }

void add_mul_mat_cases(std::vector<OpCase>& cases) {
    for (DType t : kQuantWeightTypes) {
        const std::string tag = type_tag(t);
        const int64_t k = row_of_blocks(t, blck_size(t) == 256 ? 2 : 3);
        struct Def {
            const char* name;
            Shape a;
            Shape b;
        };
        // gemv (a decode step), a small batch, a batch big enough for a GPU's matrix path and BLAS's
        // default minimum, and a
        // broadcast of a over dims 2 and 3 (grouped-query attention's shape).
        for (const Def& d : {Def{"gemv", {k, 37, 1, 1}, {k, 1, 1, 1}}, Def{"batch7", {k, 13, 1, 1}, {k, 7, 1, 1}},
                             Def{"batch33", {k, 35, 1, 1}, {k, 33, 1, 1}},
                             Def{"bcast23", {k, 9, 2, 3}, {k, 5, 4, 3}}}) {
            cases.push_back({std::string("mul_mat_") + d.name + "_" + tag,
                             [=](CaseBuilder& c) {
                                 Tensor* a = c.input(t, d.a);
                                 return xb::mul_mat(c.ctx(), a, c.input(DType::F32, d.b));
                             },
                             mul_mat_ref, kTolMatMulQuant});
        }
    }
    // A GPU's tile path over several tiles in both directions (128 weight rows x 64 columns each)
    // with short last ones, many k steps; and its mat-vec path's largest column count.
    for (DType t : kQuantWeightTypes) {
        const int64_t k = row_of_blocks(t, blck_size(t) == 256 ? 2 : 9);
        cases.push_back({"mul_mat_tiles_" + type_tag(t),
                         [=](CaseBuilder& c) {
                             Tensor* a = c.input(t, {k, 133, 1, 1});  // inputs in order: a, then b
                             return xb::mul_mat(c.ctx(), a, c.input(DType::F32, {k, 70, 1, 1}));
                         },
                         mul_mat_ref, kTolMatMulQuant});
    }
    cases.push_back({"mul_mat_batch8_q4_K",
                     [](CaseBuilder& c) {
                         Tensor* a = c.input(DType::Q4_K, {512, 19, 1, 1});
                         return xb::mul_mat(c.ctx(), a, c.input(DType::F32, {512, 8, 1, 1}));
                     },
                     mul_mat_ref, kTolMatMulQuant});
    // Rows of a apart (a permuted: dims 1 and 2 swapped) and f16 activations, for every format.
    for (DType t : kQuantWeightTypes) {
        const int64_t k = row_of_blocks(t, blck_size(t) == 256 ? 1 : 2);
        cases.push_back({"mul_mat_permuted_a_" + type_tag(t),
                         [=](CaseBuilder& c) {
                             Tensor* a = xb::permute(c.ctx(), c.input(t, {k, 2, 9, 1}), {0, 2, 1, 3});
                             return xb::mul_mat(c.ctx(), a, c.input(DType::F16, {k, 5, 2, 1}));
                         },
                         [](const std::vector<RefArray>& in) {
                             return exact::mul_mat(exact::permute(in[0], {0, 2, 1, 3}), in[1]);
                         },
                         kTolMatMulQuant});
    }
    // Activations strided: b a transposed matrix, every element of a column apart.
    cases.push_back({"mul_mat_transposed_b_q6_K",
                     [](CaseBuilder& c) {
                         Tensor* a = c.input(DType::Q6_K, {256, 11, 1, 1});
                         return xb::mul_mat(c.ctx(), a, xb::transpose(c.ctx(), c.input(DType::F32, {3, 256, 1, 1})));
                     },
                     [](const std::vector<RefArray>& in) { return exact::mul_mat(in[0], exact::transpose(in[1])); },
                     kTolMatMulQuant});
}

void add_get_rows_cases(std::vector<OpCase>& cases) {
    for (DType t : kQuantWeightTypes) {
        // Dequantizing a stored row is exact: the output is the row as the reference reads it.
        cases.push_back({"get_rows_" + type_tag(t),
                         [=](CaseBuilder& b) {
                             Tensor* a = b.input(t, {row_of_blocks(t, 1), 9, 2, 1});
                             return xb::get_rows(b.ctx(), a, b.input(DType::I32, {5, 2, 1, 1}, random_indices(9)));
                         },
                         [](const std::vector<RefArray>& in) { return exact::get_rows(in[0], in[1]); }, kTolExact});
    }
}

void add_copy_cases(std::vector<OpCase>& cases) {
    for (DType t : kQuantWeightTypes) {
        const std::string tag = type_tag(t);
        const int64_t k = row_of_blocks(t, 2);
        cases.push_back({"cast_" + tag + "_f32",
                         [=](CaseBuilder& b) { return xb::cast(b.ctx(), b.input(t, {k, 3, 2, 1}), DType::F32); },
                         identity, kTolExact});
        if (!can_quantize(t)) continue;  // the read-only formats, as in ggml
        cases.push_back({"cast_f32_" + tag,
                         [=](CaseBuilder& b) { return xb::cast(b.ctx(), b.input(DType::F32, {k, 3, 2, 1}), t); },
                         identity, quantize_tolerance(t)});
    }
    // Dequantizing into f16 rounds once more; into a transposed f32 destination, element by element.
    cases.push_back({"cast_q8_0_f16",
                     [](CaseBuilder& b) { return xb::cast(b.ctx(), b.input(DType::Q8_0, {64, 5, 1, 1}), DType::F16); },
                     identity, kTolF16});
    cases.push_back({"cpy_q4_K_into_transposed_f32",
                     [](CaseBuilder& b) {
                         Tensor* x = b.input(DType::Q4_K, {256, 3, 1, 1});
                         Tensor* dst = b.input(DType::F32, {3, 256, 1, 1});
                         return xb::cpy(b.ctx(), x, xb::transpose(b.ctx(), dst));
                     },
                     identity, kTolExact});
    // Quantizing the rows of a permuted f16 tensor (a KV cache written in another layout).
    cases.push_back({"cpy_permuted_f16_q8_0",
                     [](CaseBuilder& b) {
                         Tensor* x = xb::permute(b.ctx(), b.input(DType::F16, {64, 3, 2, 1}), {0, 2, 1, 3});
                         return xb::cpy(b.ctx(), x, b.input(DType::Q8_0, {64, 2, 3, 1}));
                     },
                     [](const std::vector<RefArray>& in) { return exact::permute(in[0], {0, 2, 1, 3}); },
                     quantize_tolerance(DType::Q8_0)});
}

}  // namespace

std::vector<OpCase> quant_cases() {
    std::vector<OpCase> cases;
    add_mul_mat_cases(cases);
    add_get_rows_cases(cases);
    add_copy_cases(cases);
    return cases;
}

}  // namespace xb::opcheck
