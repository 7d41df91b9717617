// Op cases of the attention ops: soft_max_ext (masks, scale, ALiBi), diag_mask_inf, rope (normal,
// neox, partial rotation, frequency settings, YaRN) and flash_attn_ext (GQA, masks, softcap, ALiBi),
// both with and without attention sinks.
#include <cmath>

#include "opcheck/cases.hpp"
#include "exact/ops.hpp"

namespace xb::opcheck {

namespace {

using xb::DType;
using xb::Tensor;

// Rope angles theta = p * base^(-2k/n_dims) are computed in f32 (often by a running product over k),
// with a relative error up to ~n_dims/2 ulp; for positions < 64 and n_dims <= 32 that is
// |d theta| <= 64 * 16 * 6e-8 = 6e-5 per element, so NMSE <= ~4e-9 at worst.
constexpr double kTolRopeF32 = 1e-8;
// flash_attn_ext with f16/bf16 K and V: the inputs are exact, but a backend may round q (and the
// softmax weights) to K/V's type for its dot products, as ggml does: NMSE ~u^2 of that type
// (f16 2.4e-7, bf16 1.5e-5), with the same 20x margin for both.
constexpr double kTolAttnF16 = 5e-6;
constexpr double kTolAttnBF16 = 3e-4;

double attn_tolerance(DType kv) {
    switch (kv) {
        case DType::F16: return kTolAttnF16;
        case DType::BF16: return kTolAttnBF16;
        default: return kTolF32Reduce;
    }
}

// --- soft_max ------------------------------------------------------------------------------------

struct SoftMaxDef {
    std::string name;
    Shape a;
    DType mask_type;  // I32: no mask
    Shape mask;
    Generator mask_values;
    float scale;
    float max_bias;
};

OpCase soft_max_case(const SoftMaxDef& d) {
    const bool masked = d.mask_type != DType::I32;
    return {"soft_max_" + d.name,
            [=](CaseBuilder& b) {
                Tensor* a = b.input(DType::F32, d.a, uniform(-3.0f, 3.0f));
                Tensor* mask = masked ? b.input(d.mask_type, d.mask, d.mask_values) : nullptr;
                return xb::soft_max_ext(b.ctx(), a, mask, d.scale, d.max_bias);
            },
            [=](const std::vector<RefArray>& in) {
                return exact::soft_max(in[0], masked ? &in[1] : nullptr, d.scale, d.max_bias);
            },
            kTolF32Reduce};
}

void add_soft_max_cases(std::vector<OpCase>& cases) {
    const Generator m = uniform(-2.0f, 2.0f);
    const std::vector<SoftMaxDef> defs = {
        {"plain", {67, 7, 3, 1}, DType::I32, {}, {}, 1.0f, 0.0f},
        {"scale", {67, 7, 3, 1}, DType::I32, {}, {}, 0.35f, 0.0f},
        {"mask_f32", {67, 7, 3, 1}, DType::F32, {67, 7, 1, 1}, m, 0.5f, 0.0f},
        {"mask_f16", {67, 7, 3, 1}, DType::F16, {67, 7, 1, 1}, m, 0.5f, 0.0f},
        {"mask_more_rows", {33, 7, 3, 1}, DType::F16, {33, 12, 1, 1}, m, 1.0f, 0.0f},
        {"mask_bcast23", {33, 5, 4, 2}, DType::F32, {33, 5, 2, 1}, m, 0.8f, 0.0f},
        {"mask_per_head", {33, 5, 4, 2}, DType::F16, {33, 5, 4, 2}, m, 0.8f, 0.0f},
        {"causal_f16", {16, 7, 3, 1}, DType::F16, {16, 7, 1, 1}, causal_mask(-1.0f, 1.0f, 9), 1.0f, 0.0f},
        // ALiBi: 6 heads (not a power of two: both slope series), 4 heads (one series).
        {"alibi_6_heads", {33, 5, 6, 1}, DType::F32, {33, 5, 1, 1}, m, 1.0f, 8.0f},
        {"alibi_4_heads_f16", {33, 5, 4, 2}, DType::F16, {33, 5, 1, 1}, causal_mask(-1.0f, 1.0f, 28), 0.5f, 4.0f},
    };
    for (const SoftMaxDef& d : defs) cases.push_back(soft_max_case(d));
    cases.push_back(
        {"soft_max_transposed",
         [](CaseBuilder& b) {
             return xb::soft_max(b.ctx(),
                                 xb::transpose(b.ctx(), b.input(DType::F32, {7, 33, 1, 1}, uniform(-3.0f, 3.0f))));
         },
         [](const std::vector<RefArray>& in) { return exact::soft_max(exact::transpose(in[0]), nullptr, 1.0, 0.0); },
         kTolF32Reduce});
}

// Attention sinks (one logit per head, dim 2, that joins each row's normalisation with no output):
// no mask, a mask broadcast over heads, ALiBi, and a causal mask whose first rows are masked out
// entirely (the sink alone normalises them: zeros). Sinks of magnitude up to 4 dominate some rows.
void add_soft_max_sink_cases(std::vector<OpCase>& cases) {
    const Generator m = uniform(-2.0f, 2.0f);
    const std::vector<SoftMaxDef> defs = {
        {"sinks", {67, 7, 3, 1}, DType::I32, {}, {}, 1.0f, 0.0f},
        {"sinks_mask_f16", {33, 5, 4, 2}, DType::F16, {33, 5, 1, 1}, m, 0.5f, 0.0f},
        {"sinks_alibi", {33, 5, 6, 1}, DType::F32, {33, 5, 1, 1}, m, 1.0f, 8.0f},
        {"sinks_all_masked_rows", {16, 9, 3, 1}, DType::F16, {16, 9, 1, 1}, causal_mask(-1.0f, 1.0f, -3), 1.0f, 0.0f},
    };
    for (const SoftMaxDef& d : defs) {
        const bool masked = d.mask_type != DType::I32;
        cases.push_back({"soft_max_" + d.name,
                         [=](CaseBuilder& b) {
                             Tensor* a = b.input(DType::F32, d.a, uniform(-3.0f, 3.0f));
                             Tensor* mask = masked ? b.input(d.mask_type, d.mask, d.mask_values) : nullptr;
                             Tensor* sinks = b.input(DType::F32, {d.a[2], 1, 1, 1}, uniform(-4.0f, 4.0f));
                             return xb::soft_max_ext(b.ctx(), a, mask, d.scale, d.max_bias, sinks);
                         },
                         [=](const std::vector<RefArray>& in) {
                             return exact::soft_max(in[0], masked ? &in[1] : nullptr, d.scale, d.max_bias, &in[masked ? 2 : 1]);
                         },
                         kTolF32Reduce});
    }
}

// --- diag_mask_inf -------------------------------------------------------------------------------

void add_diag_mask_cases(std::vector<OpCase>& cases) {
    for (int n_past : {0, 2, 20}) {
        cases.push_back({"diag_mask_inf_past" + std::to_string(n_past),
                         [=](CaseBuilder& b) {
                             return xb::diag_mask_inf(b.ctx(), b.input(DType::F32, {9, 7, 3, 1}), n_past);
                         },
                         [=](const std::vector<RefArray>& in) { return exact::diag_mask_inf(in[0], n_past); },
                         kTolExact});
    }
    // The usual causal attention chain: softmax(diag_mask_inf(x * s)).
    constexpr int n_past = 3;
    constexpr float s = 0.6f;
    cases.push_back({"soft_max_of_diag_mask_inf",
                     [](CaseBuilder& b) {
                         Tensor* x = b.input(DType::F32, {11, 8, 2, 1}, uniform(-3.0f, 3.0f));
                         return xb::soft_max(b.ctx(), xb::diag_mask_inf(b.ctx(), xb::scale(b.ctx(), x, s), n_past));
                     },
                     [](const std::vector<RefArray>& in) {
                         const RefArray scaled = exact::map(in[0], [](double v) { return v * s; });
                         return exact::soft_max(exact::diag_mask_inf(scaled, n_past), nullptr, 1.0, 0.0);
                     },
                     kTolF32Reduce});
}

// --- rope ----------------------------------------------------------------------------------------

struct RopeDef {
    std::string name;
    DType type;
    Shape a;  // [head_dim, n_head, n_tokens, 1]
    xb::RopeParams params;
    bool freq_factors = false;  // Llama 3.1's per-pair divisors, a third input
};

xb::RopeParams rope_params(int n_dims, xb::RopeMode mode) {
    xb::RopeParams p;
    p.n_dims = n_dims;
    p.mode = mode;
    return p;
}

// YaRN settings whose correction dims (2.6 -> 2 and 5.6 -> 6 for n_dims 16, base 10000) sit well
// away from integers, so that floor/ceil agree between f32 and double.
xb::RopeParams yarn_params(xb::RopeMode mode, float ext_factor) {
    xb::RopeParams p = rope_params(16, mode);
    p.n_ctx_orig = 4096;
    p.freq_scale = 0.25f;
    p.ext_factor = ext_factor;
    p.attn_factor = 1.0f;
    return p;
}

OpCase rope_case(const RopeDef& d) {
    const double tolerance = d.type == DType::F32 ? kTolRopeF32 : tolerance_for_output(d.type);
    return {"rope_" + d.name + "_" + type_tag(d.type),
            [=](CaseBuilder& b) {
                Tensor* a = b.input(d.type, d.a);
                Tensor* positions = b.input(DType::I32, {d.a[2], 1, 1, 1}, random_indices(64));
                // Llama 3.1's factors run from 1 (high frequencies) to 8 (low): cover that range and beyond.
                Tensor* factors = d.freq_factors ? b.input(DType::F32, {d.params.n_dims / 2, 1, 1, 1}, uniform(0.5f, 9.0f)) : nullptr;
                return xb::rope(b.ctx(), a, positions, d.params, factors);
            },
            [=](const std::vector<RefArray>& in) { return exact::rope(in[0], in[1], d.params, d.freq_factors ? &in[2] : nullptr); },
            tolerance};
}

void add_rope_cases(std::vector<OpCase>& cases) {
    using xb::RopeMode;
    xb::RopeParams freq = rope_params(24, RopeMode::Normal);
    freq.freq_base = 500.0f;
    freq.freq_scale = 0.5f;
    xb::RopeParams freq_neox = freq;
    freq_neox.mode = RopeMode::Neox;
    xb::RopeParams attn = rope_params(16, RopeMode::Neox);
    attn.attn_factor = 0.8f;
    const std::vector<RopeDef> defs = {
        {"normal", DType::F32, {32, 4, 5, 1}, rope_params(32, RopeMode::Normal)},
        {"neox", DType::F32, {32, 4, 5, 1}, rope_params(32, RopeMode::Neox)},
        {"normal_partial", DType::F32, {40, 3, 7, 1}, rope_params(24, RopeMode::Normal)},
        {"neox_partial", DType::F32, {40, 3, 7, 1}, rope_params(24, RopeMode::Neox)},
        {"normal", DType::F16, {32, 3, 5, 1}, rope_params(32, RopeMode::Normal)},
        {"neox_partial", DType::F16, {40, 3, 7, 1}, rope_params(16, RopeMode::Neox)},
        {"neox", DType::BF16, {32, 3, 5, 1}, rope_params(32, RopeMode::Neox)},
        {"freq_base_scale", DType::F32, {32, 3, 5, 1}, freq},
        {"freq_base_scale_neox", DType::F32, {32, 3, 5, 1}, freq_neox},
        {"attn_factor", DType::F32, {16, 3, 5, 1}, attn},
        {"yarn", DType::F32, {24, 3, 6, 1}, yarn_params(RopeMode::Normal, 1.0f)},
        {"yarn_neox_half", DType::F32, {24, 3, 6, 1}, yarn_params(RopeMode::Neox, 0.5f)},
        {"freq_factors", DType::F32, {32, 4, 5, 1}, rope_params(32, RopeMode::Normal), true},
        {"freq_factors_neox_partial", DType::F32, {40, 3, 7, 1}, rope_params(24, RopeMode::Neox), true},
        {"freq_factors", DType::F16, {32, 3, 5, 1}, freq, true},
    };
    for (const RopeDef& d : defs) cases.push_back(rope_case(d));
}

// --- flash_attn_ext ------------------------------------------------------------------------------

struct FlashDef {
    std::string name;
    int64_t d, dv, n_q, n_kv, n_head, n_head_kv, n_seq;
    DType kv;
    DType mask_type;  // I32: no mask
    Generator mask_values;
    float scale, max_bias, softcap;
    int64_t mask_heads = 1;  // mask planes, broadcast over the heads (a divisor of n_head)
};

OpCase flash_case(const FlashDef& f) {
    const bool masked = f.mask_type != DType::I32;
    return {"flash_attn_ext_" + f.name + "_" + type_tag(f.kv),
            [=](CaseBuilder& b) {
                Tensor* q = b.input(DType::F32, {f.d, f.n_q, f.n_head, f.n_seq});
                Tensor* k = b.input(f.kv, {f.d, f.n_kv, f.n_head_kv, f.n_seq});
                Tensor* v = b.input(f.kv, {f.dv, f.n_kv, f.n_head_kv, f.n_seq});
                Tensor* mask = masked ? b.input(f.mask_type, {f.n_kv, f.n_q, f.mask_heads, 1}, f.mask_values) : nullptr;
                return xb::flash_attn_ext(b.ctx(), q, k, v, mask, f.scale, f.max_bias, f.softcap);
            },
            [=](const std::vector<RefArray>& in) {
                return exact::flash_attn_ext(in[0], in[1], in[2], masked ? &in[3] : nullptr, f.scale, f.max_bias,
                                           f.softcap);
            },
            attn_tolerance(f.kv)};
}

// flash_attn_ext with sinks (f32 [n_head], the last input).
OpCase flash_sink_case(const FlashDef& f) {
    const bool masked = f.mask_type != DType::I32;
    return {"flash_attn_ext_sinks_" + f.name + "_" + type_tag(f.kv),
            [=](CaseBuilder& b) {
                Tensor* q = b.input(DType::F32, {f.d, f.n_q, f.n_head, f.n_seq});
                Tensor* k = b.input(f.kv, {f.d, f.n_kv, f.n_head_kv, f.n_seq});
                Tensor* v = b.input(f.kv, {f.dv, f.n_kv, f.n_head_kv, f.n_seq});
                Tensor* mask = masked ? b.input(f.mask_type, {f.n_kv, f.n_q, 1, 1}, f.mask_values) : nullptr;
                Tensor* sinks = b.input(DType::F32, {f.n_head, 1, 1, 1}, uniform(-3.0f, 3.0f));
                return xb::flash_attn_ext(b.ctx(), q, k, v, mask, f.scale, f.max_bias, f.softcap, sinks);
            },
            [=](const std::vector<RefArray>& in) {
                return exact::flash_attn_ext(in[0], in[1], in[2], masked ? &in[3] : nullptr, f.scale, f.max_bias,
                                           f.softcap, &in[masked ? 4 : 3]);
            },
            attn_tolerance(f.kv)};
}

// Sinks on the one-query path (decoding, a few rows, keys split over a GPU's warps) and on the
// tiled batch path, with and without masks; query rows whose keys are all masked out (a causal
// mask with a negative past: the first rows see no key) get zeros, the sink alone normalising them.
void add_flash_attn_sink_cases(std::vector<OpCase>& cases) {
    const Generator m = uniform(-1.0f, 1.0f);
    const Generator none;
    const float s32 = 1.0f / std::sqrt(32.0f);
    const std::vector<FlashDef> defs = {
        {"gqa2", 32, 32, 7, 13, 4, 2, 1, DType::F32, DType::I32, none, s32, 0.0f, 0.0f},
        {"decode", 64, 64, 1, 33, 4, 1, 1, DType::F16, DType::F16, m, 0.125f, 0.0f, 0.0f},
        {"split_decode", 64, 64, 1, 301, 4, 2, 1, DType::F16, DType::F16, m, 0.125f, 0.0f, 0.0f},
        {"rows_all_masked", 32, 32, 5, 12, 2, 1, 2, DType::F16, DType::F32, causal_mask(-0.5f, 0.5f, -2), s32, 0.0f,
         0.0f},
        {"tiled_causal", 64, 64, 37, 100, 4, 2, 1, DType::F32, DType::F16, causal_mask(-0.5f, 0.5f, 63), 0.125f, 0.0f,
         0.0f},
        {"tiled_all_masked", 32, 32, 21, 40, 3, 3, 1, DType::F16, DType::F16, causal_mask(-0.5f, 0.5f, -4), s32, 0.0f,
         0.0f},
        {"tiled_softcap", 40, 24, 19, 65, 6, 3, 1, DType::BF16, DType::F16, m, s32, 0.0f, 1.5f},
    };
    for (const FlashDef& f : defs) cases.push_back(flash_sink_case(f));
}

void add_flash_attn_cases(std::vector<OpCase>& cases) {
    const float s32 = 1.0f / std::sqrt(32.0f);
    const Generator m = uniform(-1.0f, 1.0f);
    const Generator none;
    const std::vector<FlashDef> defs = {
        {"gqa2", 32, 32, 7, 13, 4, 2, 1, DType::F32, DType::I32, none, s32, 0.0f, 0.0f},
        {"gqa2", 32, 32, 7, 13, 4, 2, 1, DType::F16, DType::I32, none, s32, 0.0f, 0.0f},
        {"gqa4_mask", 32, 32, 7, 13, 8, 2, 1, DType::F32, DType::F16, m, s32, 0.0f, 0.0f},
        {"gqa4_mask", 32, 32, 7, 13, 8, 2, 1, DType::F16, DType::F16, m, s32, 0.0f, 0.0f},
        {"causal_mask_f32", 32, 32, 5, 12, 2, 1, 2, DType::F16, DType::F32, causal_mask(-0.5f, 0.5f, 7), s32, 0.0f,
         0.0f},
        {"dv24_seq2", 40, 24, 3, 9, 4, 4, 2, DType::F32, DType::F16, m, 0.2f, 0.0f, 0.0f},
        {"dv24_seq2", 40, 24, 3, 9, 4, 4, 2, DType::BF16, DType::F16, m, 0.2f, 0.0f, 0.0f},
        {"decode", 64, 64, 1, 33, 4, 1, 1, DType::F16, DType::F16, m, 0.125f, 0.0f, 0.0f},
        // softcap 1.5 with scores of magnitude ~1: tanh is far from linear there.
        {"softcap", 32, 32, 7, 13, 4, 2, 1, DType::F32, DType::F16, m, 0.5f, 0.0f, 1.5f},
        {"softcap", 32, 32, 7, 13, 4, 2, 1, DType::F16, DType::I32, none, 0.5f, 0.0f, 1.5f},
        // ALiBi over 6 heads (two slope series), GQA 2.
        {"alibi", 32, 32, 7, 13, 6, 3, 1, DType::F32, DType::F16, m, s32, 8.0f, 0.0f},
        {"alibi", 32, 32, 7, 13, 6, 3, 1, DType::F16, DType::F16, causal_mask(-1.0f, 1.0f, 6), s32, 8.0f, 0.0f},
        // Enough keys that a GPU splits each row's keys over several warps and merges their partial
        // softmax states: odd key counts (a short last chunk), chunks that are all masked out
        // (causal over 200 keys with 7 past), ALiBi with softcap across chunks.
        {"split_decode", 64, 64, 1, 301, 4, 2, 1, DType::F16, DType::F16, m, 0.125f, 0.0f, 0.0f},
        {"split_causal", 32, 32, 5, 200, 2, 1, 2, DType::F16, DType::F32, causal_mask(-0.5f, 0.5f, 7), s32, 0.0f,
         0.0f},
        {"split_alibi_softcap", 32, 32, 3, 129, 6, 3, 1, DType::F32, DType::F16, m, s32, 8.0f, 1.5f},
        // A batch of queries: the CPU scores tiles of about 64 query rows (positions times the
        // heads of a GQA group) against blocks of 64 keys. Several tiles with a short last one, a
        // short last key block, GQA, K rows read in place (f32) or converted (f16/bf16), head
        // sizes that fill no whole panel (d = 20, dv = 24 or 40); a long causal prompt whose first
        // tiles skip the later key blocks whole; a mask plane per pair of heads, with ALiBi.
        {"tiled_causal", 64, 64, 37, 100, 4, 2, 1, DType::F32, DType::F16, causal_mask(-0.5f, 0.5f, 63), 0.125f, 0.0f,
         0.0f},
        {"tiled_odd_d", 20, 24, 19, 70, 3, 3, 2, DType::F16, DType::F16, m, 0.2f, 0.0f, 0.0f},
        {"tiled_alibi_softcap", 40, 24, 9, 65, 6, 3, 1, DType::BF16, DType::F16, causal_mask(-1.0f, 1.0f, 56), s32, 8.0f,
         1.5f},
        {"tiled_gqa4_causal_long", 64, 64, 150, 230, 8, 2, 1, DType::F16, DType::F16, causal_mask(-0.5f, 0.5f, 80),
         0.125f, 0.0f, 0.0f},
        {"tiled_head_masks", 32, 40, 21, 90, 6, 2, 1, DType::F32, DType::F16, m, s32, 8.0f, 0.0f, 3},
    };
    for (const FlashDef& f : defs) cases.push_back(flash_case(f));

    // Decoding at every head size a GPU's vector kernel has a template for, one to three query
    // rows, key counts that make several chunks with a short last one, GQA; chunks that are wholly
    // masked out (causal with few past keys) must weigh nothing when the chunks merge.
    for (int64_t d : {64, 80, 96, 112, 128, 256}) {
        cases.push_back(flash_case({"vec_d" + std::to_string(d), d, d, 1, 517, 4, 2, 1, DType::F16, DType::F16, m,
                                    1.0f / std::sqrt(static_cast<float>(d)), 0.0f, 0.0f}));
    }
    cases.push_back(flash_case({"vec_rows3_causal", 128, 128, 3, 400, 4, 1, 1, DType::BF16, DType::F16,
                                causal_mask(-0.5f, 0.5f, 50), 0.088f, 0.0f, 0.0f}));
    cases.push_back(flash_case({"vec_rows2_alibi_softcap", 64, 64, 2, 260, 8, 4, 2, DType::F32, DType::F32, m, 0.125f,
                                8.0f, 1.5f}));
}

}  // namespace

std::vector<OpCase> attention_cases() {
    std::vector<OpCase> cases;
    add_soft_max_cases(cases);
    add_soft_max_sink_cases(cases);
    add_diag_mask_cases(cases);
    add_rope_cases(cases);
    add_flash_attn_cases(cases);
    add_flash_attn_sink_cases(cases);
    return cases;
}


}  // namespace xb::opcheck
