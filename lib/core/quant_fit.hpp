// Scale searches shared by the quantizers of the block formats (core/quant.cpp and
// core/quantize_formats.cpp): ggml's reference roundings for the legacy types, and xbackend's
// least-squares fits for the k-quants and the table formats.
#pragma once

namespace xb {

// The element of largest magnitude, with its sign (the first one on ties).
float signed_absmax(const float* x, int n);
void min_max(const float* x, int n, float& min, float& max);
// 1 / d, or 0 for d == 0.
float inverse_or_zero(float d);
// v rounded half away from zero, within [lo, hi].
int clamp_round(float v, int lo, int hi);

// x ~ scale * q - offset with q in [0, nmax] and offset >= 0, by least squares over candidate
// scales around (max - min) / nmax (see quant_fit.cpp).
void fit_affine(const float* x, int n, int nmax, float& scale, float& offset);

// x ~ scale * q with q in [qmin, qmax] (qmin < 0 < qmax): the largest magnitude maps to qmin, as
// ggml's symmetric types do, refined by least squares over candidate scales step_size apart (in
// units of q). 0 for an all-zero x.
float fit_symmetric(const float* x, int n, int qmin, int qmax, float step_size);

}  // namespace xb
