// The perf set: one or two cases per op at sizes of a small LLM layer (4096-wide rows, 1024-square
// weights, 32 heads of 128), and the experts' products of two mixture-of-experts models, where a
// kernel's memory or arithmetic throughput dominates the fixed cost of a compute call. Their
// references are real, so they can be checked too, but slowly.
#include <cmath>
#include <string>
#include <utility>

#include "opcheck/cases.hpp"
#include "exact/ops.hpp"

namespace xb::opcheck {

namespace {

constexpr Shape kRows{4096, 512, 1, 1};  // 2M elements: 8 MB in f32

double plus(double a, double b) { return a + b; }
double times(double a, double b) { return a * b; }

void add_elementwise(std::vector<OpCase>& cases) {
    cases.push_back({"add_f32_4096x512",
                     [](CaseBuilder& b) {
                         Tensor* x = b.input(DType::F32, kRows);
                         return add(b.ctx(), x, b.input(DType::F32, kRows));
                     },
                     [](const std::vector<RefArray>& in) { return exact::binary(in[0], in[1], plus); }, kTolF32});
    cases.push_back({"mul_f32_4096x512_row",
                     [](CaseBuilder& b) {
                         Tensor* x = b.input(DType::F32, kRows);
                         return mul(b.ctx(), x, b.input(DType::F32, {4096, 1, 1, 1}));
                     },
                     [](const std::vector<RefArray>& in) { return exact::binary(in[0], in[1], times); }, kTolF32});
    cases.push_back({"scale_f32_4096x512",
                     [](CaseBuilder& b) { return scale(b.ctx(), b.input(DType::F32, kRows), 0.5f, 0.0f); },
                     [](const std::vector<RefArray>& in) { return exact::map(in[0], [](double x) { return 0.5 * x; }); },
                     kTolF32});
    for (DType t : {DType::F32, DType::F16, DType::BF16}) {
        cases.push_back({"silu_" + type_tag(t) + "_4096x512",
                         [t](CaseBuilder& b) { return silu(b.ctx(), b.input(t, kRows, uniform(-3.0f, 3.0f))); },
                         [](const std::vector<RefArray>& in) { return exact::map(in[0], exact::silu); },
                         tolerance_for_output(t)});
    }
    cases.push_back({"gelu_f32_4096x512",
                     [](CaseBuilder& b) { return gelu(b.ctx(), b.input(DType::F32, kRows, uniform(-3.0f, 3.0f))); },
                     [](const std::vector<RefArray>& in) { return exact::map(in[0], exact::gelu); }, kTolF32});
    cases.push_back({"add_f32_4096x512_row",
                     [](CaseBuilder& b) {
                         Tensor* x = b.input(DType::F32, kRows);
                         return add(b.ctx(), x, b.input(DType::F32, {4096, 1, 1, 1}));
                     },
                     [](const std::vector<RefArray>& in) { return exact::binary(in[0], in[1], plus); }, kTolF32});
    cases.push_back({"swiglu_split_f32_4096x512",
                     [](CaseBuilder& b) {
                         Tensor* g = b.input(DType::F32, kRows, uniform(-3.0f, 3.0f));
                         return glu_split(b.ctx(), g, b.input(DType::F32, kRows), GluOp::SwiGlu);
                     },
                     [](const std::vector<RefArray>& in) { return exact::glu_split(in[0], in[1], GluOp::SwiGlu); },
                     kTolF32});
}

void add_layout(std::vector<OpCase>& cases) {
    cases.push_back({"cpy_f32_f16_4096x512",
                     [](CaseBuilder& b) {
                         Tensor* x = b.input(DType::F32, kRows);
                         return cpy(b.ctx(), x, b.input(DType::F16, kRows));
                     },
                     [](const std::vector<RefArray>& in) { return in[0]; }, kTolF16});
    // ggml's CPY perf shape.
    cases.push_back({"cpy_f32_f16_512x3072",
                     [](CaseBuilder& b) {
                         Tensor* x = b.input(DType::F32, {512, 3072, 1, 1});
                         return cpy(b.ctx(), x, b.input(DType::F16, {512, 3072, 1, 1}));
                     },
                     [](const std::vector<RefArray>& in) { return in[0]; }, kTolF16});
    cases.push_back({"cpy_bf16_f16_4096x512",
                     [](CaseBuilder& b) {
                         Tensor* x = b.input(DType::BF16, kRows);
                         return cpy(b.ctx(), x, b.input(DType::F16, kRows));
                     },
                     [](const std::vector<RefArray>& in) { return in[0]; }, kTolF16});
    cases.push_back({"cont_transposed_f32_512x4096",
                     [](CaseBuilder& b) {
                         return cont(b.ctx(), transpose(b.ctx(), b.input(DType::F32, {512, 4096, 1, 1})));
                     },
                     [](const std::vector<RefArray>& in) { return exact::transpose(in[0]); }, kTolExact});
    for (DType t : {DType::F32, DType::F16}) {
        cases.push_back({"get_rows_" + type_tag(t) + "_4096x1024_256",
                         [t](CaseBuilder& b) {
                             Tensor* a = b.input(t, {4096, 1024, 1, 1});
                             return get_rows(b.ctx(), a, b.input(DType::I32, {256, 1, 1, 1}, random_indices(1024)));
                         },
                         [](const std::vector<RefArray>& in) { return exact::get_rows(in[0], in[1]); }, kTolExact});
    }
    cases.push_back({"set_rows_f16_4096x1024_64",
                     [](CaseBuilder& b) {
                         Tensor* dst = b.input(DType::F16, {4096, 1024, 1, 1});
                         Tensor* src = b.input(DType::F32, {4096, 64, 1, 1});
                         return set_rows(b.ctx(), dst, src, b.input(DType::I64, {64, 1, 1, 1}, distinct_indices(1024)));
                     },
                     [](const std::vector<RefArray>& in) { return exact::set_rows(in[0], in[1], in[2]); }, kTolF16});
}

void add_reduce(std::vector<OpCase>& cases) {
    cases.push_back({"sum_rows_f32_4096x512",
                     [](CaseBuilder& b) { return sum_rows(b.ctx(), b.input(DType::F32, kRows)); },
                     [](const std::vector<RefArray>& in) { return exact::sum_rows(in[0]); }, kTolF32Reduce});
    cases.push_back({"rms_norm_f32_4096x512",
                     [](CaseBuilder& b) { return rms_norm(b.ctx(), b.input(DType::F32, kRows), 1e-6f); },
                     [](const std::vector<RefArray>& in) { return exact::rms_norm(in[0], 1e-6); }, kTolF32Reduce});
    cases.push_back({"norm_f32_4096x512",
                     [](CaseBuilder& b) { return norm(b.ctx(), b.input(DType::F32, kRows), 1e-5f); },
                     [](const std::vector<RefArray>& in) { return exact::norm(in[0], 1e-5); }, kTolF32Reduce});
}

void add_attention(std::vector<OpCase>& cases) {
    cases.push_back({"soft_max_mask_f16_1024x512x4",
                     [](CaseBuilder& b) {
                         Tensor* a = b.input(DType::F32, {1024, 512, 4, 1}, uniform(-3.0f, 3.0f));
                         return soft_max_ext(b.ctx(), a, b.input(DType::F16, {1024, 512, 1, 1}), 0.125f, 0.0f);
                     },
                     [](const std::vector<RefArray>& in) { return exact::soft_max(in[0], &in[1], 0.125, 0.0); },
                     kTolF32Reduce});
    // ggml's SOFT_MAX perf shape: 5 heads of 4096 x 4096 scores, no mask.
    cases.push_back({"soft_max_f32_4096x4096x5",
                     [](CaseBuilder& b) {
                         return soft_max_ext(b.ctx(), b.input(DType::F32, {4096, 4096, 5, 1}, uniform(-3.0f, 3.0f)),
                                             nullptr, 1.0f, 0.0f);
                     },
                     [](const std::vector<RefArray>& in) { return exact::soft_max(in[0], nullptr, 1.0, 0.0); },
                     kTolF32Reduce});
    RopeParams neox;
    neox.n_dims = 128;
    neox.mode = RopeMode::Neox;
    cases.push_back({"rope_neox_f32_128x32x64",
                     [neox](CaseBuilder& b) {
                         Tensor* a = b.input(DType::F32, {128, 32, 64, 1});
                         return rope(b.ctx(), a, b.input(DType::I32, {64, 1, 1, 1}, random_indices(4096)), neox);
                     },
                     [neox](const std::vector<RefArray>& in) { return exact::rope(in[0], in[1], neox); }, 1e-6});
    // ggml's test-backend-ops perf shapes: normal mode [128, 32, 512], neox [64, 8, 512]; f32 and f16;
    // positions below 512 as there (n_ctx 512): sinf/cosf cost more on larger angles.
    for (const auto& [mode, shape_] : {std::pair{RopeMode::Normal, Shape{128, 32, 512, 1}}, std::pair{RopeMode::Neox, Shape{64, 8, 512, 1}}}) {
        const Shape shape = shape_;  // a plain variable: clang 14 cannot capture structured bindings
        RopeParams rp;
        rp.n_dims = static_cast<int>(shape[0]);
        rp.mode = mode;
        for (DType t : {DType::F32, DType::F16}) {
            cases.push_back({std::string("rope_") + (mode == RopeMode::Neox ? "neox_" : "normal_") + type_tag(t) + "_" +
                                 std::to_string(shape[0]) + "x" + std::to_string(shape[1]) + "x" + std::to_string(shape[2]),
                             [rp, t, shape](CaseBuilder& b) {
                                 Tensor* a = b.input(t, shape);
                                 return rope(b.ctx(), a, b.input(DType::I32, {shape[2], 1, 1, 1}, random_indices(512)), rp);
                             },
                             [rp](const std::vector<RefArray>& in) { return exact::rope(in[0], in[1], rp); },
                             t == DType::F32 ? 1e-6 : tolerance_for_output(t)});
        }
    }
    // Decoding (one query) and a 32-token prompt over 1024 cached positions, decoding over 4096, 32
    // heads on 8 kv heads.
    for (const auto& [n_q, n_kv] : {std::pair<int64_t, int64_t>{1, 1024}, {32, 1024}, {1, 4096}}) {
        cases.push_back({"flash_attn_ext_f16_d128_q" + std::to_string(n_q) + "_kv" + std::to_string(n_kv),
                         [n_q = n_q, n_kv = n_kv](CaseBuilder& b) {
                             Tensor* q = b.input(DType::F32, {128, n_q, 32, 1});
                             Tensor* k = b.input(DType::F16, {128, n_kv, 8, 1});
                             Tensor* v = b.input(DType::F16, {128, n_kv, 8, 1});
                             Tensor* mask = b.input(DType::F16, {n_kv, n_q, 1, 1});
                             return flash_attn_ext(b.ctx(), q, k, v, mask, 1.0f / std::sqrt(128.0f), 0.0f, 0.0f);
                         },
                         [](const std::vector<RefArray>& in) {
                             return exact::flash_attn_ext(in[0], in[1], in[2], &in[3], 1.0 / std::sqrt(128.0), 0.0, 0.0);
                         },
                         5e-6});
    }
}

void add_matmul(std::vector<OpCase>& cases) {
    const auto mul_mat_ref = [](const std::vector<RefArray>& in) { return exact::mul_mat(in[0], in[1]); };
    for (DType t : {DType::F32, DType::F16, DType::BF16}) {
        cases.push_back({"mul_mat_" + type_tag(t) + "_1024x1024x128",
                         [t](CaseBuilder& b) {
                             Tensor* w = b.input(t, {1024, 1024, 1, 1});
                             return mul_mat(b.ctx(), w, b.input(DType::F32, {1024, 128, 1, 1}));
                         },
                         mul_mat_ref, t == DType::BF16 ? kTolMatMulBF16 : 1e-6});
    }
    // A 4096-square weight at batch 32 and 512 (the sizes the CPU-speed targets name against OpenBLAS).
    for (DType t : {DType::F32, DType::F16}) {
        for (int64_t n : {32, 512}) {
            cases.push_back({"mul_mat_" + type_tag(t) + "_4096x4096x" + std::to_string(n),
                             [t, n](CaseBuilder& b) {
                                 Tensor* w = b.input(t, {4096, 4096, 1, 1});
                                 return mul_mat(b.ctx(), w, b.input(DType::F32, {4096, n, 1, 1}));
                             },
                             mul_mat_ref, 1e-6});
        }
    }
    // Quantized weights of a 4096-wide layer: decoding (1), a small batch (8), test-backend-ops'
    // batch (32) and a prompt (512).
    for (DType t : kQuantWeightTypes) {
        for (int64_t n : {1, 8, 32, 512}) {
            cases.push_back({"mul_mat_" + type_tag(t) + "_4096x4096x" + std::to_string(n),
                             [t, n](CaseBuilder& b) {
                                 Tensor* w = b.input(t, {4096, 4096, 1, 1});
                                 return mul_mat(b.ctx(), w, b.input(DType::F32, {4096, n, 1, 1}));
                             },
                             mul_mat_ref, kTolMatMulQuant});
        }
    }
    cases.push_back({"mul_mat_f16_gemv_4096x4096",
                     [](CaseBuilder& b) {
                         Tensor* w = b.input(DType::F16, {4096, 4096, 1, 1});
                         return mul_mat(b.ctx(), w, b.input(DType::F32, {4096, 1, 1, 1}));
                     },
                     mul_mat_ref, 1e-6});
}

// Experts' products at the shapes of ggml's own mul_mat_id perf cases (test-backend-ops perf), so
// that scripts/ggml-side-by-side can match them: Qwen3-30B-A3B's gate (128 experts of 768 x 2048, 8
// per token) and gpt-oss-20b's (32 of 2880 x 2880, 4 per token), per-slot activations, each token
// routed to distinct experts; decoding (1), a small batch (8) and a prompt (512).
struct ExpertShape {
    const char* model;
    int64_t n_mats, n_used, m, k;
};

void add_experts(std::vector<OpCase>& cases) {
    const auto ref_fn = [](const std::vector<RefArray>& in) { return exact::mul_mat_id(in[0], in[1], in[2]); };
    const ExpertShape qwen3{"qwen3moe", 128, 8, 768, 2048};
    const ExpertShape gpt_oss{"gpt_oss", 32, 4, 2880, 2880};
    const auto add = [&](const ExpertShape& s, DType t, int64_t n) {
        cases.push_back({"mul_mat_id_" + type_tag(t) + "_" + s.model + "_" + std::to_string(n),
                         [s, t, n](CaseBuilder& b) {
                             Tensor* as = b.input(t, {s.k, s.m, s.n_mats, 1});
                             Tensor* x = b.input(DType::F32, {s.k, s.n_used, n, 1});
                             Tensor* ids = b.input(DType::I32, {s.n_used, n, 1, 1}, distinct_indices(s.n_mats));
                             return mul_mat_id(b.ctx(), as, x, ids);
                         },
                         ref_fn, kTolMatMulQuant});
    };
    for (DType t : {DType::Q4_K, DType::Q6_K, DType::Q8_0, DType::IQ4_XS}) {
        for (int64_t n : {1, 8, 512}) add(qwen3, t, n);
    }
    for (int64_t n : {1, 512}) add(gpt_oss, DType::MXFP4, n);
}

}  // namespace

std::vector<OpCase> perf_cases() {
    std::vector<OpCase> cases;
    add_elementwise(cases);
    add_layout(cases);
    add_reduce(cases);
    add_attention(cases);
    add_matmul(cases);
    add_experts(cases);
    return cases;
}

}  // namespace xb::opcheck
