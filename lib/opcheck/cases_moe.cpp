// Op cases of the mixture-of-experts ops: mul_mat_id (float experts and every quantized weight
// type; activations shared by the slots (b.ne[1] == 1) or one per slot (== n_used); ids that
// repeat experts across tokens and leave some unused, or repeat them within a token; strided and
// permuted operands; enough tokens per expert for a GPU's tile path) and add_id, and the router's
// chain top_k -> mul_mat_id.
//
// Sizes are odd in every dim but K, which is whole blocks of the experts' type.
#include <iterator>
#include <string>

#include "opcheck/cases.hpp"
#include "exact/ops.hpp"

namespace xb::opcheck {

namespace {

using xb::DType;
using xb::Tensor;

RefArray mul_mat_id_ref(const std::vector<RefArray>& in) { return exact::mul_mat_id(in[0], in[1], in[2]); }

// The experts a token chooses: n_used distinct ones from the first `n_from` of them (the others are
// never chosen), as a router's top-k picks them; across tokens experts repeat.
Generator routed(int64_t n_from) { return distinct_indices(n_from); }

struct IdDef {
    std::string name;
    int64_t k, m, n_as;   // as [k, m, n_as]
    int64_t n_b;          // b [k, n_b, n_t]: 1 (shared by the slots) or n_used
    int64_t n_used, n_t;
    Generator ids;
};

OpCase mul_mat_id_case(DType t, const IdDef& d) {
    return {"mul_mat_id_" + d.name + "_" + type_tag(t),
            [=](CaseBuilder& c) {
                Tensor* as = c.input(t, {d.k, d.m, d.n_as, 1});
                Tensor* b = c.input(DType::F32, {d.k, d.n_b, d.n_t, 1});
                return xb::mul_mat_id(c.ctx(), as, b, c.input(DType::I32, {d.n_used, d.n_t, 1, 1}, d.ids));
            },
            mul_mat_id_ref, matmul_tolerance(t)};
}

// Slot 0 of every token picks expert 0; the other slots pick at random among experts 1 .. n - 1:
// one expert of many pairs beside experts of few (a CPU's mul_mat_id takes them different ways).
Generator one_popular_expert(int64_t n) {
    return [n](const Shape& ne, std::mt19937& rng) {
        std::uniform_int_distribution<int64_t> other(1, n - 1);
        std::vector<float> v(static_cast<size_t>(ne[0] * ne[1]));
        for (size_t i = 0; i < v.size(); ++i) {
            v[i] = i % static_cast<size_t>(ne[0]) == 0 ? 0.0f : static_cast<float>(other(rng));
        }
        return v;
    };
}

// K of two to three blocks of t (one for the k-quants' 256).
int64_t small_k(DType t) { return is_quantized(t) ? row_of_blocks(t, blck_size(t) == 256 ? 1 : 3) : 67; }

void add_mul_mat_id_cases(std::vector<OpCase>& cases) {
    std::vector<DType> types = {DType::F32, DType::F16, DType::BF16};
    types.insert(types.end(), std::begin(kQuantWeightTypes), std::end(kQuantWeightTypes));
    for (DType t : types) {
        const int64_t k = small_k(t);
        // Decoding one token, a small batch with shared and per-slot activations (the gate/up and the
        // down projections of an MoE layer), and ids that repeat an expert within a token.
        cases.push_back(mul_mat_id_case(t, {"decode", k, 13, 6, 1, 3, 1, routed(5)}));
        cases.push_back(mul_mat_id_case(t, {"shared_b", k, 13, 7, 1, 3, 5, routed(5)}));
        cases.push_back(mul_mat_id_case(t, {"per_slot_b", k, 13, 7, 3, 3, 5, routed(5)}));
        cases.push_back(mul_mat_id_case(t, {"repeats", k, 11, 5, 4, 4, 3, random_indices(5)}));
    }
    // A GPU's tile path: every token uses experts 0 and 1 (70 columns each, two tiles of columns),
    // 133 rows (two tiles of rows), expert 2 unused.
    for (DType t : kQuantWeightTypes) {
        cases.push_back(mul_mat_id_case(t, {"tiles", row_of_blocks(t, blck_size(t) == 256 ? 1 : 2), 133, 3, 1, 2, 70, routed(2)}));
    }
    cases.push_back(mul_mat_id_case(DType::F16, {"tiles", 64, 133, 3, 2, 2, 70, routed(2)}));
    // One expert of 19 pairs (the tile or packed path) beside five of about 4 (the row dots), in one
    // product; shared and per-slot activations.
    for (DType t : {DType::Q4_K, DType::Q8_0, DType::IQ4_XS, DType::F16, DType::F32}) {
        cases.push_back(mul_mat_id_case(t, {"mixed", small_k(t), 21, 7, 1, 2, 19, one_popular_expert(6)}));
        cases.push_back(mul_mat_id_case(t, {"mixed_per_slot", small_k(t), 21, 7, 2, 2, 19, one_popular_expert(6)}));
    }
    // More tokens than a GPU's mat-vec path takes, per-slot activations, a quarter of the experts.
    cases.push_back(mul_mat_id_case(DType::Q4_K, {"batch40", 256, 37, 16, 4, 4, 40, routed(9)}));
    cases.push_back(mul_mat_id_case(DType::F32, {"batch40", 64, 37, 16, 4, 4, 40, routed(9)}));

    // Experts permuted (matrix rows of neighbouring experts interleaved) and activations strided:
    // b a permutation of [k, n_t, n_used].
    for (DType t : {DType::F16, DType::Q4_0}) {
        cases.push_back({"mul_mat_id_permuted_" + type_tag(t),
                         [t](CaseBuilder& c) {
                             Tensor* as = xb::permute(c.ctx(), c.input(t, {64, 5, 9, 1}), {0, 2, 1, 3});  // [64, 9, 5]
                             Tensor* b = xb::permute(c.ctx(), c.input(DType::F32, {64, 7, 3, 1}), {0, 2, 1, 3});
                             return xb::mul_mat_id(c.ctx(), as, b, c.input(DType::I32, {3, 7, 1, 1}, routed(5)));
                         },
                         [](const std::vector<RefArray>& in) {
                             return exact::mul_mat_id(exact::permute(in[0], {0, 2, 1, 3}), exact::permute(in[1], {0, 2, 1, 3}),
                                                    in[2]);
                         },
                         matmul_tolerance(t)});
    }
    // A GPU's tile path with b read element by element: quantized experts, 19 tokens, per-slot
    // activations permuted from [k, n_t, n_used] and read through a window of wider rows (4 bytes
    // off the 16-byte alignment that four-float loads need).
    for (DType t : {DType::Q4_K, DType::Q8_0}) {
        const int64_t k = row_of_blocks(t, blck_size(t) == 256 ? 1 : 2);
        cases.push_back({"mul_mat_id_tiles_unaligned_b_" + type_tag(t),
                         [t, k](CaseBuilder& c) {
                             Tensor* as = c.input(t, {k, 21, 5, 1});
                             Tensor* wide = c.input(DType::F32, {k + 1, 19, 3, 1});
                             Tensor* window = xb::view(c.ctx(), wide, {k, 19, 3, 1}, {wide->nb[1], wide->nb[2], wide->nb[3]},
                                                       wide->nb[0]);
                             Tensor* b = xb::permute(c.ctx(), window, {0, 2, 1, 3});  // [k, 3, 19]
                             return xb::mul_mat_id(c.ctx(), as, b, c.input(DType::I32, {3, 19, 1, 1}, routed(5)));
                         },
                         [k](const std::vector<RefArray>& in) {
                             const RefArray window =
                                 exact::strided_view(in[1], {k, 19, 3, 1}, {1, k + 1, (k + 1) * 19, (k + 1) * 57}, 1);
                             return exact::mul_mat_id(in[0], exact::permute(window, {0, 2, 1, 3}), in[2]);
                         },
                         matmul_tolerance(t)});
    }
    // f32 experts read through a window of wider rows, f16 activations transposed (elements of a
    // column apart).
    cases.push_back({"mul_mat_id_strided_f32_b_f16",
                     [](CaseBuilder& c) {
                         Tensor* wide = c.input(DType::F32, {40, 11, 4, 1});
                         Tensor* as = xb::view(c.ctx(), wide, {33, 11, 4, 1}, {wide->nb[1], wide->nb[2], wide->nb[3]},
                                               3 * wide->nb[0]);
                         Tensor* bt = c.input(DType::F16, {5, 33, 1, 1});
                         Tensor* b = xb::reshape(c.ctx(), xb::cont(c.ctx(), xb::transpose(c.ctx(), bt)), {33, 1, 5, 1});
                         return xb::mul_mat_id(c.ctx(), as, xb::transpose(c.ctx(), xb::transpose(c.ctx(), b)),
                                               c.input(DType::I32, {2, 5, 1, 1}, routed(4)));
                     },
                     [](const std::vector<RefArray>& in) {
                         const RefArray as = exact::strided_view(in[0], {33, 11, 4, 1}, {1, 40, 440, 1760}, 3);
                         return exact::mul_mat_id(as, exact::reshape(exact::transpose(in[1]), {33, 1, 5, 1}), in[2]);
                     },
                     kTolMatMulF16});
}

// The router's choice feeding the experts: ids = top_k(logits, n_used), a strided view of an
// argsort, as a mixture-of-experts layer builds them.
void add_router_cases(std::vector<OpCase>& cases) {
    for (DType t : {DType::F32, DType::Q8_0}) {
        cases.push_back({"mul_mat_id_top_k_" + type_tag(t),
                         [t](CaseBuilder& c) {
                             Tensor* as = c.input(t, {64, 19, 8, 1});
                             Tensor* b = c.input(DType::F32, {64, 1, 6, 1});
                             Tensor* logits = c.input(DType::F32, {8, 6, 1, 1});
                             return xb::mul_mat_id(c.ctx(), as, b, xb::top_k(c.ctx(), logits, 3));
                         },
                         [](const std::vector<RefArray>& in) {
                             const RefArray order = exact::argsort(in[2], SortOrder::Descending);
                             RefArray ids({3, 6, 1, 1});
                             for_each_index(ids.ne(), [&](int64_t i, int64_t t, int64_t, int64_t) { ids.at(i, t) = order.at(i, t); });
                             return exact::mul_mat_id(in[0], in[1], ids);
                         },
                         matmul_tolerance(t)});
    }
}

void add_add_id_cases(std::vector<OpCase>& cases) {
    const auto add_id_ref = [](const std::vector<RefArray>& in) { return exact::add_id(in[0], in[1], in[2]); };
    cases.push_back({"add_id",
                     [](CaseBuilder& c) {
                         Tensor* a = c.input(DType::F32, {37, 3, 5, 1});
                         Tensor* b = c.input(DType::F32, {37, 7, 1, 1});
                         return xb::add_id(c.ctx(), a, b, c.input(DType::I32, {3, 5, 1, 1}, routed(6)));
                     },
                     add_id_ref, kTolF32});
    // a a permuted view ([n, n_t, n_used] stored), ids from a wider tensor (rows apart), and a bias
    // matrix whose rows are apart too.
    cases.push_back({"add_id_strided",
                     [](CaseBuilder& c) {
                         Tensor* a = xb::permute(c.ctx(), c.input(DType::F32, {9, 4, 2, 1}), {0, 2, 1, 3});  // [9, 2, 4]
                         Tensor* wide_b = c.input(DType::F32, {12, 5, 1, 1});
                         Tensor* b = xb::view_2d(c.ctx(), wide_b, 9, 5, wide_b->nb[1], 0);
                         Tensor* wide_ids = c.input(DType::I32, {3, 4, 1, 1}, random_indices(5));
                         Tensor* ids = xb::view_2d(c.ctx(), wide_ids, 2, 4, wide_ids->nb[1], 0);
                         return xb::add_id(c.ctx(), a, b, ids);
                     },
                     [](const std::vector<RefArray>& in) {
                         return exact::add_id(exact::permute(in[0], {0, 2, 1, 3}),
                                            exact::strided_view(in[1], {9, 5, 1, 1}, {1, 12, 60, 60}, 0),
                                            exact::strided_view(in[2], {2, 4, 1, 1}, {1, 3, 12, 12}, 0));
                     },
                     kTolF32});
}

}  // namespace

std::vector<OpCase> moe_cases() {
    std::vector<OpCase> cases;
    add_mul_mat_id_cases(cases);
    add_router_cases(cases);
    add_add_id_cases(cases);
    return cases;
}

}  // namespace xb::opcheck
