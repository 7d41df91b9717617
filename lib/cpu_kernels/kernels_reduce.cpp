// Reductions over rows and whole tensors: sum, sum_rows/mean, argmax, argsort, norm, rms_norm and
// l2_norm.
//
// Row sums accumulate in double, as ggml does with ggml_float, so long rows of f32 keep their
// precision; results are rounded to the destination type once. Packed f32 rows go through the
// instruction set's row loops (cpu_kernels/row_loops.hpp).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "core/op_math.hpp"
#include "core/op_params.hpp"
#include "cpu_kernels/kernels.hpp"
#include "cpu_kernels/row_iter.hpp"
#include "cpu_kernels/row_loops.hpp"

namespace xb::cpu_kernels {

namespace {

// Sum of row r of t in double, any float type and stride.
double row_sum(const Tensor& t, RowIndex r) {
    if (packed_f32_rows(t)) return row_loops().sum(f32_row(t, r), t.ne[0]);
    const std::byte* x = row_ptr(t, r);
    double acc = 0.0;
    for (int64_t i = 0; i < t.ne[0]; ++i) acc += static_cast<double>(load_at(t, x, i));
    return acc;
}

// --- norm ------------------------------------------------------------------------------------------


// Norm of a packed f32 row; y may alias x.
void norm_row_f32(float* y, const float* x, int64_t n, float eps) {
    const RowLoops& loops = row_loops();
    const float mean = static_cast<float>(loops.sum(x, n) / static_cast<double>(n));
    loops.scale(y, y, n, norm_scale_f32(Op::Norm, loops.center(x, y, n, mean), n, eps), 0.0f);
}

// rms_norm and l2_norm: x times a factor of the sum of its squares.
void scaled_norm_row_f32(Op op, float* y, const float* x, int64_t n, float eps) {
    const RowLoops& loops = row_loops();
    loops.scale(x, y, n, norm_scale_f32(op, loops.sum_squares(x, n), n, eps), 0.0f);
}

// Any norm on a strided row of any float type: reads the source twice instead of keeping a copy,
// which stays correct when dst aliases src (each element is read before it is written).
void norm_row_any(const Tensor& dst, std::byte* y, const Tensor& src, const std::byte* x, Op op, float eps) {
    const int64_t n = src.ne[0];
    double mean_d = 0.0;
    if (op == Op::Norm) {
        for (int64_t i = 0; i < n; ++i) mean_d += static_cast<double>(load_at(src, x, i));
        mean_d /= static_cast<double>(n);
    }
    const float mean = static_cast<float>(mean_d);
    double sq = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        const float v = load_at(src, x, i) - mean;
        sq += static_cast<double>(v * v);
    }
    const float scale = norm_scale_f32(op, sq, n, eps);
    for (int64_t i = 0; i < n; ++i) store_at(dst, y, i, (load_at(src, x, i) - mean) * scale);
}

}  // namespace

void compute_sum(const ComputeParams& p, Tensor& dst) {
    // A single pass over memory: one thread is enough and keeps the result deterministic.
    if (p.ith != 0) return;
    const Tensor& src = *dst.src[0];
    double total = 0.0;
    if (!src.is_empty()) {
        for (int64_t row = 0; row < src.nrows(); ++row) total += row_sum(src, row_index(src, row));
    }
    store_from_f32(dst.type, dst.data, static_cast<float>(total));
}

void compute_sum_rows(const ComputeParams& p, Tensor& dst) {
    const Tensor& src = *dst.src[0];
    if (dst.is_empty()) return;
    const bool mean = dst.op == Op::Mean;
    const auto range = p.split(dst.nrows());
    for (int64_t row = range.begin; row < range.end; ++row) {
        const RowIndex r = row_index(dst, row);
        const double s = src.ne[0] > 0 ? row_sum(src, r) : 0.0;
        // ggml divides the f32 sum by n; an empty row's mean is 0/0 = NaN there as here.
        const float v = mean ? static_cast<float>(s) / static_cast<float>(src.ne[0]) : static_cast<float>(s);
        store_from_f32(dst.type, row_ptr(dst, r), v);
    }
}

void compute_argmax(const ComputeParams& p, Tensor& dst) {
    const Tensor& src = *dst.src[0];
    if (dst.is_empty()) return;
    const auto range = p.split(src.ne[1]);
    for (int64_t i1 = range.begin; i1 < range.end; ++i1) {
        const std::byte* x = src.element_ptr(0, i1);
        // Strict > keeps the first of equal maxima; NaN never wins.
        float best = -std::numeric_limits<float>::infinity();
        int32_t best_i = 0;
        for (int64_t i0 = 0; i0 < src.ne[0]; ++i0) {
            const float v = load_at(src, x, i0);
            if (v > best) {
                best = v;
                best_i = static_cast<int32_t>(i0);
            }
        }
        *reinterpret_cast<int32_t*>(dst.element_ptr(i1)) = best_i;
    }
}

// Each row's indices sorted by argsort_before (core/op_math.hpp): a total order over (value,
// index), so std::sort gives the stable order the op defines. Threads split rows.
void compute_argsort(const ComputeParams& p, Tensor& dst) {
    const Tensor& src = *dst.src[0];
    if (dst.is_empty()) return;
    const SortOrder order = ArgsortParams::load(dst).order;
    const int64_t n = src.ne[0];
    std::vector<float> values(static_cast<size_t>(n));
    std::vector<int32_t> index(static_cast<size_t>(n));
    const auto range = p.split(src.nrows());
    for (int64_t row = range.begin; row < range.end; ++row) {
        const RowIndex r = row_index(src, row);
        const std::byte* x = row_ptr(src, r);
        for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = load_at(src, x, i);
        std::iota(index.begin(), index.end(), 0);
        std::sort(index.begin(), index.end(), [&](int32_t a, int32_t b) {
            return argsort_before(order, values[static_cast<size_t>(a)], a, values[static_cast<size_t>(b)], b);
        });
        std::byte* y = row_ptr(dst, r);
        for (int64_t i = 0; i < n; ++i) {
            std::memcpy(y + i * static_cast<int64_t>(dst.nb[0]), &index[static_cast<size_t>(i)], sizeof(int32_t));
        }
    }
}

void compute_norm(const ComputeParams& p, Tensor& dst) {
    const Tensor& src = *dst.src[0];
    if (dst.is_empty()) return;
    const float eps = NormParams::load(dst).eps;
    const int64_t n = src.ne[0];
    const bool fast = packed_f32_rows(dst) && packed_f32_rows(src);
    const auto range = p.split(dst.nrows());
    for (int64_t row = range.begin; row < range.end; ++row) {
        const RowIndex r = row_index(dst, row);
        if (!fast) {
            norm_row_any(dst, row_ptr(dst, r), src, row_ptr(src, r), dst.op, eps);
        } else if (dst.op == Op::Norm) {
            norm_row_f32(f32_row(dst, r), f32_row(src, r), n, eps);
        } else {
            scaled_norm_row_f32(dst.op, f32_row(dst, r), f32_row(src, r), n, eps);
        }
    }
}

}  // namespace xb::cpu_kernels
