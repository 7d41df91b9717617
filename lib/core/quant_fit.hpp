// Scale searches shared by the quantizers of the block formats (core/quantize_blocks.hpp and
// core/quantize_formats.hpp): ggml's reference roundings for the legacy types, and xbackend's
// least-squares fits for the k-quants and the table formats. XB_HD: the CUDA backend quantizes with
// the same code (its quantizing copies). They round alike, but for
// the multiply-adds the device fuses and the host may keep apart: a value on a rounding boundary
// can land one step away.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/dtype.hpp"
#include "core/host_device.hpp"

namespace xb {

// std::min / std::max / std::clamp, which device code cannot call (the same comparisons, so the
// same results for every input).
template <typename T>
XB_HD T min_value(T a, T b) {
    return b < a ? b : a;
}
template <typename T>
XB_HD T max_value(T a, T b) {
    return a < b ? b : a;
}
template <typename T>
XB_HD T clamp_value(T v, T lo, T hi) {
    return v < lo ? lo : (hi < v ? hi : v);
}
// `bytes` zero bytes at p (std::memset, which device code cannot call).
XB_HD void zero_bytes(void* p, size_t bytes) {
    auto* b = static_cast<uint8_t*>(p);
    for (size_t i = 0; i < bytes; ++i) b[i] = 0;
}

// The element of largest magnitude, with its sign (the first one on ties).
XB_HD float signed_absmax(const float* x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; ++j) {
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    return max;
}

XB_HD void min_max(const float* x, int n, float& min, float& max) {
    min = x[0];
    max = x[0];
    for (int j = 1; j < n; ++j) {
        min = min_value(min, x[j]);
        max = max_value(max, x[j]);
    }
}

// The largest |x| of n values, NaN when any of them is NaN. A float max (max_value, maxps) drops a
// NaN met in some positions, and a block quantized under a step that missed its NaN multiplies as
// finite numbers: the NaN would vanish from the product. The max of the magnitudes' bits keeps it.
XB_HD float largest_magnitude(const float* x, int n) {
    uint32_t bits = 0;
    for (int j = 0; j < n; ++j) bits = max_value(bits, magnitude_bits(x[j]));
    return bits_float(bits);
}

// 1 / d, or 0 for d == 0.
XB_HD float inverse_or_zero(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

// v rounded half away from zero, within [lo, hi].
XB_HD int clamp_round(float v, int lo, int hi) { return clamp_value(static_cast<int>(lroundf(v)), lo, hi); }

// The largest of n values.
XB_HD float largest(const float* v, int n) {
    float m = v[0];
    for (int j = 1; j < n; ++j) m = max_value(m, v[j]);
    return m;
}

// x ~ scale * q - offset with q in [0, nmax] and offset >= 0 (the range always reaches down to 0 or
// below, as the format's subtracted minimum requires). Candidate scales around (max - min) / nmax
// each give a rounding of x; for each, the least-squares scale and offset of that rounding; the
// one with the smallest squared error wins.
XB_HD void fit_affine(const float* x, int n, int nmax, float& scale, float& offset) {
    float min = 0.0f, max = 0.0f;
    min_max(x, n, min, max);
    min = min_value(min, 0.0f);
    scale = 0.0f;
    offset = -min;
    if (max <= min) return;
    double best = INFINITY;
    for (int step = -10; step <= 10; ++step) {
        const float iscale = (static_cast<float>(nmax) + 0.1f * static_cast<float>(step)) / (max - min);
        double sq = 0, sx = 0, sqq = 0, sqx = 0;
        for (int j = 0; j < n; ++j) {
            const double q = clamp_round(iscale * (x[j] - min), 0, nmax);
            sq += q;
            sx += x[j];
            sqq += q * q;
            sqx += q * x[j];
        }
        // x ~ s * q + m by least squares; when every q is the same (a constant run) only the scale
        // is free, and likewise when the best offset would have to be added (m > 0): pin m at 0.
        const double det = n * sqq - sq * sq;
        double s = det > 0 ? (n * sqx - sq * sx) / det : 0;
        double m = det > 0 ? (sqq * sx - sq * sqx) / det : 1;
        if (m > 0) {
            m = 0;
            s = sqq > 0 ? sqx / sqq : 0;
        }
        if (s <= 0) continue;
        double err = 0;
        for (int j = 0; j < n; ++j) {
            const double q = clamp_value(round((x[j] - m) / s), 0.0, static_cast<double>(nmax));
            const double e = s * q + m - x[j];
            err += e * e;
        }
        if (err < best) {
            best = err;
            scale = static_cast<float>(s);
            offset = static_cast<float>(-m);
        }
    }
}

// x ~ scale * q with q in [qmin, qmax] (qmin < 0 < qmax): the largest magnitude maps to qmin, as
// ggml's symmetric types do, refined by least squares over candidate scales step_size apart (in
// units of q). 0 for an all-zero x.
XB_HD float fit_symmetric(const float* x, int n, int qmin, int qmax, float step_size) {
    const float max = signed_absmax(x, n);
    if (max == 0.0f) return 0.0f;
    float best_scale = max / static_cast<float>(qmin);
    double best = INFINITY;
    for (int step = -8; step <= 8; ++step) {
        const float iscale = (static_cast<float>(qmin) + step_size * static_cast<float>(step)) / max;
        double sqq = 0, sqx = 0;
        for (int j = 0; j < n; ++j) {
            const double q = clamp_round(iscale * x[j], qmin, qmax);
            sqq += q * q;
            sqx += q * x[j];
        }
        if (sqq <= 0) continue;
        const double s = sqx / sqq;
        double err = 0;
        for (int j = 0; j < n; ++j) {
            const double e = s * clamp_value(round(x[j] / s), static_cast<double>(qmin), static_cast<double>(qmax)) - x[j];
            err += e * e;
        }
        if (err < best) {
            best = err;
            best_scale = static_cast<float>(s);
        }
    }
    return best_scale;
}

}  // namespace xb
