// The portable dot products: the reference the vector ones are tested against.
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "core/quant.hpp"
#include "core/quant_fit.hpp"
#include "core/quant_int_dot.hpp"
#include "cpu_kernels/quant_dot.hpp"
#include "core/quant_block_types.hpp"

namespace xb::cpu_kernels {

namespace {

// The rounding is core/quant_int_dot.hpp's, which the GPU's activation blocks use too.
void quantize_q8sum(const float* x, void* out, int64_t n) {
    auto* y = static_cast<BlockQ8Sum*>(out);
    for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
        const float d = q8_step(largest_magnitude(x, kQK));  // NaN for a block holding one
        const float id = q8_inverse_step(d);
        int sum = 0;
        for (int j = 0; j < kQK; ++j) {
            y[b].qs[j] = static_cast<int8_t>(q8_round(x[j], id));
            sum += y[b].qs[j];
        }
        const Q8Scale stored = q8_stored_scale(d, sum);
        y[b].d = stored.d;
        y[b].s = stored.s;
    }
}

void quantize_q8k(const float* x, void* out, int64_t n) { quantize_row(DType::Q8_K, x, out, n); }

// The q's of the legacy types: element j of the block, before any offset.
int q4(const uint8_t* qs, int j) { return j < kQK / 2 ? (qs[j] & 0x0F) : (qs[j - kQK / 2] >> 4); }
int q5(const uint8_t* qs, const uint8_t* qh, int j) {
    return q4(qs, j) | static_cast<int>(((load_u32_le(qh) >> j) & 1u) << 4);
}

float dot_q4_0(int64_t n, const void* wv, const void* av) {
    const auto* w = static_cast<const BlockQ4_0*>(wv);
    const auto* a = static_cast<const BlockQ8Sum*>(av);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK; ++b) {
        int isum = 0;
        for (int j = 0; j < kQK; ++j) isum += (q4(w[b].qs, j) - 8) * a[b].qs[j];
        sum += f16_to_f32(w[b].d) * a[b].d * static_cast<float>(isum);
    }
    return sum;
}

float dot_q4_1(int64_t n, const void* wv, const void* av) {
    const auto* w = static_cast<const BlockQ4_1*>(wv);
    const auto* a = static_cast<const BlockQ8Sum*>(av);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK; ++b) {
        int isum = 0;
        for (int j = 0; j < kQK; ++j) isum += q4(w[b].qs, j) * a[b].qs[j];
        sum += f16_to_f32(w[b].d) * a[b].d * static_cast<float>(isum) + f16_to_f32(w[b].m) * a[b].s;
    }
    return sum;
}

float dot_q5_0(int64_t n, const void* wv, const void* av) {
    const auto* w = static_cast<const BlockQ5_0*>(wv);
    const auto* a = static_cast<const BlockQ8Sum*>(av);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK; ++b) {
        int isum = 0;
        for (int j = 0; j < kQK; ++j) isum += (q5(w[b].qs, w[b].qh, j) - 16) * a[b].qs[j];
        sum += f16_to_f32(w[b].d) * a[b].d * static_cast<float>(isum);
    }
    return sum;
}

float dot_q5_1(int64_t n, const void* wv, const void* av) {
    const auto* w = static_cast<const BlockQ5_1*>(wv);
    const auto* a = static_cast<const BlockQ8Sum*>(av);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK; ++b) {
        int isum = 0;
        for (int j = 0; j < kQK; ++j) isum += q5(w[b].qs, w[b].qh, j) * a[b].qs[j];
        sum += f16_to_f32(w[b].d) * a[b].d * static_cast<float>(isum) + f16_to_f32(w[b].m) * a[b].s;
    }
    return sum;
}

float dot_q8_0(int64_t n, const void* wv, const void* av) {
    const auto* w = static_cast<const BlockQ8_0*>(wv);
    const auto* a = static_cast<const BlockQ8Sum*>(av);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK; ++b) {
        int isum = 0;
        for (int j = 0; j < kQK; ++j) isum += w[b].qs[j] * a[b].qs[j];
        sum += f16_to_f32(w[b].d) * a[b].d * static_cast<float>(isum);
    }
    return sum;
}

// q4_K and q5_K: sub-block j scaled by its 6-bit scale, minus its min times the activations' sum.
template <typename Block, bool kFifthBit>
float dot_k_affine(int64_t n, const void* wv, const void* av) {
    const auto* w = static_cast<const Block*>(wv);
    const auto* a = static_cast<const BlockQ8_K*>(av);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQKK; ++b) {
        int scaled = 0, mins = 0;
        for (int j = 0; j < 8; ++j) {
            int sc = 0, m = 0;
            k_scale_min(w[b].scales, j, sc, m);
            const uint8_t* qs = w[b].qs + 32 * (j / 2);
            int isum = 0;
            for (int l = 0; l < 32; ++l) {
                int q = j % 2 == 0 ? (qs[l] & 0x0F) : (qs[l] >> 4);
                if constexpr (kFifthBit) q |= ((w[b].qh[l] >> j) & 1) << 4;
                isum += q * a[b].qs[32 * j + l];
            }
            scaled += sc * isum;
            mins += m * (a[b].bsums[2 * j] + a[b].bsums[2 * j + 1]);
        }
        sum += f16_to_f32(w[b].d) * a[b].d * static_cast<float>(scaled) -
               f16_to_f32(w[b].dmin) * a[b].d * static_cast<float>(mins);
    }
    return sum;
}

float dot_q6_K(int64_t n, const void* wv, const void* av) {
    const auto* w = static_cast<const BlockQ6_K*>(wv);
    const auto* a = static_cast<const BlockQ8_K*>(av);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQKK; ++b) {
        int scaled = 0;
        for (int g = 0; g < kQKK / 16; ++g) {
            int isum = 0;
            for (int l = 0; l < 16; ++l) {
                const int e = 16 * g + l;
                const int h = e / 128, grp = (e % 128) / 32, pos = e % 32;
                const uint8_t ql = w[b].ql[64 * h + 32 * (grp % 2) + pos];
                const int lo = grp < 2 ? (ql & 0x0F) : (ql >> 4);
                const int hi = (w[b].qh[32 * h + pos] >> (2 * grp)) & 3;
                isum += ((lo | (hi << 4)) - 32) * a[b].qs[e];
            }
            scaled += w[b].scales[g] * isum;
        }
        sum += f16_to_f32(w[b].d) * a[b].d * static_cast<float>(scaled);
    }
    return sum;
}

// Each column in turn: the scalar code has no decoding worth sharing between columns.
template <float (*Dot)(int64_t, const void*, const void*)>
void columns(int64_t n, const void* w, const void* act, size_t act_stride, int ncols, float* out) {
    for (int j = 0; j < ncols; ++j) out[j] = Dot(n, w, static_cast<const std::byte*>(act) + act_stride * static_cast<size_t>(j));
}

// The newer formats (core/quant_unit.hpp): each 32-value unit decoded once by decode_unit (the
// code the GPU runs too) for every column; the activations are q8_K blocks for the 256-value
// formats (unit u: values 32u.. of the block, sums per 16 in bsums) and q8_0-style ones otherwise.
template <typename Block>
void dot_units(int64_t n, const void* weights, const void* act, size_t act_stride, int ncols, float* out) {
    constexpr int kUnits = Block::kElems / kUnitValues;
    constexpr bool kSuperBlock = Block::kElems == kQKK;
    const auto* w = static_cast<const Block*>(weights);
    float sums[kMaxDotColumns] = {};
    for (int64_t b = 0; b < n / Block::kElems; ++b) {
        for (int u = 0; u < kUnits; ++u) {
            QuantUnit unit;
            decode_unit(w[b], u, unit);
            for (int c = 0; c < ncols; ++c) {
                const std::byte* column = static_cast<const std::byte*>(act) + act_stride * static_cast<size_t>(c);
                const int8_t* a = nullptr;
                float d = 0.0f;
                int sum[2] = {0, 0};
                if constexpr (kSuperBlock) {
                    const BlockQ8_K& blk = reinterpret_cast<const BlockQ8_K*>(column)[b];
                    a = blk.qs + kUnitValues * u;
                    d = blk.d;
                    sum[0] = blk.bsums[2 * u];
                    sum[1] = blk.bsums[2 * u + 1];
                } else {
                    const BlockQ8Sum& blk = reinterpret_cast<const BlockQ8Sum*>(column)[b * kUnits + u];
                    a = blk.qs;
                    d = blk.d;
                    for (int l = 0; l < kUnitValues; ++l) sum[l / 16] += a[l];
                }
                float s = 0.0f;
                for (int h = 0; h < 2; ++h) {
                    int dot = 0;
                    for (int l = 16 * h; l < 16 * h + 16; ++l) dot += unit.q[l] * a[l];
                    s += unit.scale[h] * static_cast<float>(dot) + unit.offset[h] * static_cast<float>(sum[h]);
                }
                sums[c] += d * s;
            }
        }
    }
    for (int c = 0; c < ncols; ++c) out[c] = sums[c];
}

void add_unit_dots(QuantDot& table) {
    for (int t = 0; t < kDTypeCount; ++t) {
        with_block_type(
            static_cast<DType>(t),
            [&]<typename Block>(BlockTag<Block>) {
                if constexpr (UnitBlock<Block>) table.dot[t] = dot_units<Block>;
                return true;
            },
            false);
    }
}

QuantDot make_table() {
    QuantDot t{};
    t.isa = Isa::Scalar;
    t.dot_q4_K_x8 = dot_q4_K_x8_reference;
    t.quantize_q8sum = quantize_q8sum;
    t.quantize_q8k = quantize_q8k;
    t.dot[static_cast<int>(DType::Q4_0)] = columns<dot_q4_0>;
    t.dot[static_cast<int>(DType::Q4_1)] = columns<dot_q4_1>;
    t.dot[static_cast<int>(DType::Q5_0)] = columns<dot_q5_0>;
    t.dot[static_cast<int>(DType::Q5_1)] = columns<dot_q5_1>;
    t.dot[static_cast<int>(DType::Q8_0)] = columns<dot_q8_0>;
    t.dot[static_cast<int>(DType::Q4_K)] = columns<dot_k_affine<BlockQ4_K, false>>;
    t.dot[static_cast<int>(DType::Q5_K)] = columns<dot_k_affine<BlockQ5_K, true>>;
    t.dot[static_cast<int>(DType::Q6_K)] = columns<dot_q6_K>;
    add_unit_dots(t);
    return t;
}

}  // namespace

const QuantDot& quant_dot_scalar() {
    static const QuantDot table = make_table();
    return table;
}

}  // namespace xb::cpu_kernels
