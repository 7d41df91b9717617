#include "product_rounding.hpp"

#include <algorithm>
#include <vector>

#include "backend/tensor_io.hpp"
#include "core/quant.hpp"

namespace xb::tools {

namespace {

// Weight rows read (and dequantized) this many at a time: the output matrix of a large model is
// gigabytes as f32.
constexpr int64_t kRowChunk = 1024;

// x rounded as r does, column by column (each column ne0 values).
std::vector<float> round_columns(DType type, const std::vector<float>& x, int64_t ne0) {
    std::vector<float> out(x.size());
    std::vector<std::byte> blocks(row_size(type, ne0));
    for (size_t c = 0; c + static_cast<size_t>(ne0) <= x.size(); c += static_cast<size_t>(ne0)) {
        if (is_quantized(type)) {
            quantize_row(type, &x[c], blocks.data(), ne0);
            dequantize_row(type, blocks.data(), &out[c], ne0);
        } else {
            for (int64_t i = 0; i < ne0; ++i) {
                const float v = x[c + static_cast<size_t>(i)];
                out[c + static_cast<size_t>(i)] = type == DType::F16 ? f16_to_f32(f32_to_f16(v)) : bf16_to_f32(f32_to_bf16(v));
            }
        }
    }
    return out;
}

// Rows [first, first + n) of a contiguous 2-D (or 3-D, experts stacked) weight, dequantized.
Result<std::vector<float>> weight_rows(const Tensor& w, int64_t first, int64_t n) {
    const size_t row_bytes = w.nb[1];
    std::vector<std::byte> bytes(static_cast<size_t>(n) * row_bytes);
    XB_RETURN_IF_ERROR(tensor_get(w, bytes.data(), static_cast<size_t>(first) * row_bytes, bytes.size()));
    std::vector<float> rows(static_cast<size_t>(n * w.ne[0]));
    for (int64_t r = 0; r < n; ++r) {
        const std::byte* src = bytes.data() + static_cast<size_t>(r) * row_bytes;
        float* dst = &rows[static_cast<size_t>(r * w.ne[0])];
        if (is_quantized(w.type)) {
            dequantize_row(w.type, src, dst, w.ne[0]);
        } else {
            for (int64_t i = 0; i < w.ne[0]; ++i) dst[i] = load_as_f32(w.type, src + i * static_cast<int64_t>(w.nb[0]));
        }
    }
    return rows;
}

double dot(const float* a, const float* b, int64_t n) {
    double acc = 0.0;
    for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(a[i]) * b[i];
    return acc;
}

// Which matrix (expert) and which column of the rounding error each output column (slot, token)
// of a product takes: mul_mat's column j meets matrix 0; mul_mat_id's (e, t) matrix ids[e, t].
struct Column {
    int64_t matrix;
    int64_t delta;  // column of the rounding error
};

Result<std::vector<Column>> output_columns(const Tensor& node) {
    std::vector<Column> columns;
    if (node.op == Op::MulMat) {
        for (int64_t j = 0; j < node.ne[1]; ++j) columns.push_back({0, j});
        return columns;
    }
    XB_ASSIGN_OR_RETURN(std::vector<float> ids, tensor_get_f32(*node.src[2]));
    const int64_t n_used = node.ne[1], n_b = node.src[1]->ne[1];
    for (int64_t t = 0; t < node.ne[2]; ++t) {
        for (int64_t e = 0; e < n_used; ++e) {
            columns.push_back({static_cast<int64_t>(ids[static_cast<size_t>(t * n_used + e)]), t * n_b + e % n_b});
        }
    }
    return columns;
}

}  // namespace

std::optional<DType> activation_rounding_type(DType weights) {
    if (weights == DType::F16 || weights == DType::BF16) return weights;
    if (!is_quantized(weights)) return std::nullopt;
    return blck_size(weights) == 256 ? DType::Q8_K : DType::Q8_0;
}

Result<std::optional<double>> activation_rounding_nmse(const Tensor& node) {
    if (node.op != Op::MulMat && node.op != Op::MulMatId) return std::optional<double>();
    const Tensor& w = *node.src[0];
    const Tensor& x = *node.src[1];
    const std::optional<DType> rounding = activation_rounding_type(w.type);
    const bool weights_are_matrices = node.op == Op::MulMat ? w.ne[2] == 1 && w.ne[3] == 1 : w.ne[3] == 1;
    if (!rounding || !weights_are_matrices || !w.is_contiguous() || x.ne[3] != 1 || (node.op == Op::MulMat && x.ne[2] != 1)) {
        return std::optional<double>();
    }
    const int64_t k = w.ne[0], m = w.ne[1];
    XB_ASSIGN_OR_RETURN(std::vector<float> xs, tensor_get_f32(x));
    std::vector<float> delta = round_columns(*rounding, xs, k);
    for (size_t i = 0; i < delta.size(); ++i) delta[i] -= xs[i];
    XB_ASSIGN_OR_RETURN(std::vector<float> y, tensor_get_f32(node));
    XB_ASSIGN_OR_RETURN(std::vector<Column> columns, output_columns(node));
    double err = 0.0, norm = 0.0;
    for (const float v : y) norm += static_cast<double>(v) * v;
    // Each matrix's columns (an expert no column chose is not read).
    std::vector<std::vector<const float*>> deltas_of(static_cast<size_t>(node.op == Op::MulMat ? 1 : w.ne[2]));
    for (const Column& c : columns) deltas_of[static_cast<size_t>(c.matrix)].push_back(&delta[static_cast<size_t>(c.delta * k)]);
    for (size_t matrix = 0; matrix < deltas_of.size(); ++matrix) {
        if (deltas_of[matrix].empty()) continue;
        for (int64_t first = 0; first < m; first += kRowChunk) {
            const int64_t n = std::min(kRowChunk, m - first);
            XB_ASSIGN_OR_RETURN(std::vector<float> rows, weight_rows(w, static_cast<int64_t>(matrix) * m + first, n));
            for (const float* d : deltas_of[matrix]) {
                for (int64_t r = 0; r < n; ++r) {
                    const double e = dot(&rows[static_cast<size_t>(r * k)], d, k);
                    err += e * e;
                }
            }
        }
    }
    return std::optional<double>(norm > 0.0 ? err / norm : err);
}

}  // namespace xb::tools
