// Attention building blocks: soft_max, diag_mask_inf and rope (flash_attn_ext: kernels_flash_attn.cpp).
//
// Every kernel splits rows across the team; sources and dst are addressed through their strides.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/op_math.hpp"
#include "core/ops.hpp"
#include "cpu_kernels/kernels.hpp"
#include "cpu_kernels/row_iter.hpp"
#include "cpu_kernels/row_kernels.hpp"
#include "cpu_kernels/row_loops.hpp"

namespace xb::cpu_kernels {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// --- soft_max ------------------------------------------------------------------------------------

// dst row = softmax(src row * scale + slope * mask row); `mask` may be null. `sink` (-inf: none) is
// one more logit of the row's normalisation with no output of its own: it enters the maximum and
// the sum. `mask_row` is the calling thread's scratch for a converted mask row. A row of only -inf
// (and no sink) yields NaN (exp(-inf - -inf)), as in ggml.
void soft_max_row(const Tensor& src, const Tensor* mask, Tensor& dst, RowIndex r, float scale, float slope, float sink,
                  std::vector<float>& mask_row) {
    const int64_t n = src.ne[0];
    const std::byte* x = row_ptr(src, r);
    const std::byte* m = mask ? mask->element_ptr(0, r.i1, r.i2 % mask->ne[2], r.i3 % mask->ne[3]) : nullptr;
    std::byte* y = row_ptr(dst, r);
    const bool packed = src.nb[0] == sizeof(float) && dst.nb[0] == sizeof(float) &&
                        (m == nullptr || mask->nb[0] == type_size(mask->type));
    if (packed) {
        // Passes over f32 rows through the instruction set's loops; in place (dst aliasing src) is safe.
        const RowLoops& loops = row_loops();
        const float* xf = reinterpret_cast<const float*>(x);
        float* v = reinterpret_cast<float*>(y);
        const float* mf = reinterpret_cast<const float*>(m);
        if (m != nullptr && mask->type != DType::F32) {
            mask_row.resize(static_cast<size_t>(n));
            (void)convert_row(mask->type, m, DType::F32, mask_row.data(), n);
            mf = mask_row.data();
        }
        loops.scale_add(xf, mf, v, n, scale, slope);
        const float max = std::max(loops.max(v, n), sink);
        const double sum = row_kernels().exp_sum(v, n, max) + (sink == kNegInf ? 0.0 : std::exp(sink - max));
        const float inv = static_cast<float>(1.0 / sum);
        loops.scale(v, v, n, inv, 0.0f);
        return;
    }
    // Strided rows, element by element.
    float max = kNegInf;
    for (int64_t i = 0; i < n; ++i) {
        float w = *reinterpret_cast<const float*>(x + i * src.nb[0]) * scale;
        if (m != nullptr) w += slope * load_as_f32(mask->type, m + i * mask->nb[0]);
        *reinterpret_cast<float*>(y + i * dst.nb[0]) = w;
        max = std::max(max, w);
    }
    max = std::max(max, sink);
    double sum = sink == kNegInf ? 0.0 : std::exp(sink - max);
    for (int64_t i = 0; i < n; ++i) {
        float& v = *reinterpret_cast<float*>(y + i * dst.nb[0]);
        v = std::exp(v - max);
        sum += v;
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t i = 0; i < n; ++i) *reinterpret_cast<float*>(y + i * dst.nb[0]) *= inv;
}

// --- rope ----------------------------------------------------------------------------------------

// cos/sin of every rotated pair at one position: cache[i0] = cos, cache[i0 + 1] = sin. Pair i0's
// angle is divided by freq_factors[i0 / 2] when there are factors (nullptr: none). The angles are
// formed one by one (each is the previous times theta_scale, as in ggml), their cos and sin by the
// instruction set's sincos, then scaled by each pair's magnitude.
struct RopeCache {
    std::vector<float> cos_sin, angle, mscale;
};

void rope_cache(const RopeParams& rp, float pos, RopeCorrDims corr, const float* freq_factors, RopeCache& c) {
    const float theta_scale = std::pow(rp.freq_base, -2.0f / static_cast<float>(rp.n_dims));
    const int64_t pairs = rp.n_dims / 2;
    c.angle.resize(static_cast<size_t>(pairs));
    c.mscale.resize(static_cast<size_t>(pairs));
    c.cos_sin.resize(static_cast<size_t>(2 * pairs));
    float theta = pos;
    for (int64_t i = 0; i < pairs; ++i) {
        const float factor = freq_factors != nullptr ? freq_factors[i] : 1.0f;
        const RopeAngle a =
            rope_yarn_angle(theta / factor, rp.freq_scale, corr, static_cast<int>(2 * i), rp.ext_factor, rp.attn_factor);
        c.angle[static_cast<size_t>(i)] = a.theta;
        c.mscale[static_cast<size_t>(i)] = a.mscale;
        theta *= theta_scale;
    }
    row_kernels().sincos(c.angle.data(), c.cos_sin.data(), pairs);
    for (int64_t i = 0; i < pairs; ++i) {
        c.cos_sin[static_cast<size_t>(2 * i)] *= c.mscale[static_cast<size_t>(i)];
        c.cos_sin[static_cast<size_t>(2 * i + 1)] *= c.mscale[static_cast<size_t>(i)];
    }
}

// Per-thread f32 copies of rows that are not packed f32: converted in, rotated, converted out.
struct RopeScratch {
    std::vector<float> in, out;
};

// `rotate` is the instruction set's rotation for rp.mode (chosen once per computation).
void rope_row(const Tensor& src, Tensor& dst, RowIndex r, const RopeParams& rp, RowLoops::RopeFn rotate,
              const std::vector<float>& cache, RopeScratch& scratch) {
    const int64_t n = src.ne[0];
    const std::byte* x = row_ptr(src, r);
    std::byte* y = row_ptr(dst, r);
    const bool src_packed = src.nb[0] == type_size(src.type);
    const bool dst_packed = dst.nb[0] == type_size(dst.type);
    // The row as f32: in place when it is packed f32, else converted (packed rows at once, strided
    // ones element by element).
    const float* xf = reinterpret_cast<const float*>(x);
    if (src.type != DType::F32 || !src_packed) {
        scratch.in.resize(static_cast<size_t>(n));
        if (src_packed) {
            (void)convert_row(src.type, x, DType::F32, scratch.in.data(), n);
        } else {
            for (int64_t i = 0; i < n; ++i) scratch.in[static_cast<size_t>(i)] = load_as_f32(src.type, x + i * src.nb[0]);
        }
        xf = scratch.in.data();
    }
    const bool dst_in_place = dst.type == DType::F32 && dst_packed;
    float* yf = reinterpret_cast<float*>(y);
    if (!dst_in_place) {
        scratch.out.resize(static_cast<size_t>(n));
        yf = scratch.out.data();
    }
    rotate(xf, yf, cache.data(), rp.n_dims);
    if (yf != xf) std::copy(xf + rp.n_dims, xf + n, yf + rp.n_dims);
    if (dst_in_place) return;
    if (dst_packed) {
        (void)convert_row(DType::F32, yf, dst.type, y, n);
    } else {
        for (int64_t i = 0; i < n; ++i) store_from_f32(dst.type, y + i * dst.nb[0], yf[i]);
    }
}

}  // namespace

void compute_soft_max(const ComputeParams& params, Tensor& dst) {
    const Tensor& src = *dst.src[0];
    const Tensor* mask = dst.src[1];
    // One logit per head (dim 2), contiguous f32 (the builder checks it).
    const auto* sinks = dst.src[2] != nullptr ? static_cast<const float*>(dst.src[2]->data) : nullptr;
    const auto [scale, max_bias] = SoftMaxParams::load(dst);
    std::vector<float> mask_row;
    const auto [r0, r1] = params.split(src.nrows());
    for (int64_t row = r0; row < r1; ++row) {
        const RowIndex r = row_index(src, row);
        const float slope = alibi_slope_f32(static_cast<int>(r.i2), static_cast<int>(src.ne[2]), max_bias);
        soft_max_row(src, mask, dst, r, scale, slope, sinks != nullptr ? sinks[r.i2] : kNegInf, mask_row);
    }
}

void compute_diag_mask_inf(const ComputeParams& params, Tensor& dst) {
    const Tensor& src = *dst.src[0];
    const int64_t n_past = DiagMaskInfParams::load(dst).n_past;
    const auto [r0, r1] = params.split(src.nrows());
    for (int64_t row = r0; row < r1; ++row) {
        const RowIndex r = row_index(src, row);
        const std::byte* x = row_ptr(src, r);
        std::byte* y = row_ptr(dst, r);
        for (int64_t i0 = 0; i0 < src.ne[0]; ++i0) {
            const float v = *reinterpret_cast<const float*>(x + i0 * src.nb[0]);
            *reinterpret_cast<float*>(y + i0 * dst.nb[0]) = i0 > n_past + r.i1 ? kNegInf : v;
        }
    }
}

void compute_rope(const ComputeParams& params, Tensor& dst) {
    const Tensor& src = *dst.src[0];
    const Tensor& pos = *dst.src[1];
    const RopeParams rp = RopeParams::load(dst);
    const RopeCorrDims corr = rope_yarn_corr_dims(rp.n_dims, rp.n_ctx_orig, rp.freq_base, rp.beta_fast, rp.beta_slow);
    // Contiguous f32 (the op builder checks it).
    const float* freq_factors = dst.src[2] != nullptr ? static_cast<const float*>(dst.src[2]->data) : nullptr;
    const RowLoops::RopeFn rotate = rp.mode == RopeMode::Neox ? row_loops().rope_neox : row_loops().rope_normal;
    RopeCache cache;
    RopeScratch scratch;
    int64_t cached_token = -1;
    // Rows are numbered with the head fastest, so consecutive rows mostly share one token's cache.
    const auto [r0, r1] = params.split(src.nrows());
    for (int64_t row = r0; row < r1; ++row) {
        const RowIndex r = row_index(src, row);
        if (r.i2 != cached_token) {
            const auto p = static_cast<float>(*reinterpret_cast<const int32_t*>(pos.element_ptr(r.i2)));
            rope_cache(rp, p, corr, freq_factors, cache);
            cached_token = r.i2;
        }
        rope_row(src, dst, r, rp, rotate, cache.cos_sin, scratch);
    }
}

}  // namespace xb::cpu_kernels
