#include "blas/matmul.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "blas/openblas.hpp"

namespace xb::blas {

namespace {

constexpr int64_t kIntMax = std::numeric_limits<int>::max();
constexpr size_t kScratchAlignment = 64;

// A 2-D strided slice of a tensor: `rows` rows (dim 1) of `cols` elements (dim 0).
struct Matrix {
    const std::byte* data;
    DType type;
    int64_t cols;
    int64_t rows;
    size_t col_stride;  // bytes between the elements of a row
    size_t row_stride;  // bytes between rows
};

Matrix slice(const Tensor& t, int64_t i2, int64_t i3) {
    const std::byte* base = static_cast<const std::byte*>(t.data) + i2 * t.nb[2] + i3 * t.nb[3];
    return {base, t.type, t.ne[0], t.ne[1], t.nb[0], t.nb[1]};
}

// Quantized a (weights) is dequantized a row at a time, as f16 and bf16 are converted.
bool is_operand_type(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16 || is_quantized(t); }

// A stride in bytes as a cblas leading dimension of at least `min_ld` floats, when it is one.
std::optional<int> leading_dim(size_t stride, int64_t min_ld) {
    if (stride % sizeof(float) != 0) return std::nullopt;
    const size_t ld = stride / sizeof(float);
    if (ld < static_cast<size_t>(std::max<int64_t>(min_ld, 1)) || ld > static_cast<size_t>(kIntMax)) {
        return std::nullopt;
    }
    return static_cast<int>(ld);
}

// The slice as sgemm can read it in place: f32 with packed rows, or packed columns (stored
// transposed). A single row or column needs no stride at all.
std::optional<GemmOperand> direct(const Matrix& m) {
    if (m.type != DType::F32 || reinterpret_cast<uintptr_t>(m.data) % alignof(float) != 0) return std::nullopt;
    const auto* p = reinterpret_cast<const float*>(m.data);
    if (m.col_stride == sizeof(float)) {
        if (m.rows == 1) return GemmOperand{p, static_cast<int>(std::max<int64_t>(m.cols, 1)), false};
        if (auto ld = leading_dim(m.row_stride, m.cols)) return GemmOperand{p, *ld, false};
    }
    if (m.row_stride == sizeof(float)) {
        if (m.cols == 1) return GemmOperand{p, static_cast<int>(std::max<int64_t>(m.rows, 1)), true};
        if (auto ld = leading_dim(m.col_stride, m.rows)) return GemmOperand{p, *ld, true};
    }
    return std::nullopt;
}

// One element of a float type at a possibly misaligned address.
float load_element(DType type, const std::byte* p) {
    alignas(8) std::byte tmp[8];
    std::memcpy(tmp, p, type_size(type));
    return load_as_f32(type, tmp);
}

// n elements `stride` bytes apart, as f32; packed aligned runs use core's vectorised converters.
void load_run(DType type, const std::byte* src, size_t stride, int64_t n, float* dst) {
    const size_t size = type_size(type);
    // A quantized row is whole consecutive blocks (the op builders check it), read a block at a time.
    if (is_quantized(type) || (stride == size && reinterpret_cast<uintptr_t>(src) % size == 0)) {
        (void)convert_row(type, src, DType::F32, dst, n);  // every operand type converts to f32
        return;
    }
    for (int64_t i = 0; i < n; ++i) dst[i] = load_element(type, src + static_cast<size_t>(i) * stride);
}

// Calls fn(begin, end) on parts of [0, count), one per OpenMP thread, when there are at least
// kMinPerThread elements per part. OpenMP rather than threads of our own: the CPU backend's
// threads are the same libgomp team, so they take these parts instead of spinning beside them.
constexpr int64_t kMinPerThread = int64_t{1} << 18;

template <typename Fn>
void split_work(int64_t count, int64_t elements_per_item, int n_threads, const Fn& fn) {
    const int64_t by_size = count * elements_per_item / kMinPerThread;
    const int64_t parts = std::clamp<int64_t>(std::min<int64_t>(by_size, n_threads), 1, std::max<int64_t>(count, 1));
    const int64_t per_part = (count + parts - 1) / parts;
#pragma omp parallel for num_threads(static_cast<int>(parts)) schedule(static) if (parts > 1)
    for (int64_t begin = 0; begin < count; begin += per_part) fn(begin, std::min(count, begin + per_part));
}

// The slice converted to packed f32 in `scratch`. A slice whose columns are packed (a transposed
// f16 weight) is copied column by column, so that the copy reads memory in order.
Result<GemmOperand> pack(const Matrix& m, Scratch& scratch, int n_threads) {
    XB_ASSIGN_OR_RETURN(float* out, scratch.floats(static_cast<size_t>(m.rows * m.cols)));
    const size_t size = type_size(m.type);
    if (m.rows > 1 && m.row_stride == size && m.col_stride != size) {
        split_work(m.cols, m.rows, n_threads, [&](int64_t c0, int64_t c1) {
            for (int64_t c = c0; c < c1; ++c) {
                load_run(m.type, m.data + static_cast<size_t>(c) * m.col_stride, m.row_stride, m.rows,
                         out + c * m.rows);
            }
        });
        return GemmOperand{out, static_cast<int>(m.rows), true};
    }
    split_work(m.rows, m.cols, n_threads, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            load_run(m.type, m.data + static_cast<size_t>(r) * m.row_stride, m.col_stride, m.cols, out + r * m.cols);
        }
    });
    return GemmOperand{out, static_cast<int>(std::max<int64_t>(m.cols, 1)), false};
}

Result<GemmOperand> prepare(const Matrix& m, Scratch& scratch, int n_threads) {
    if (auto d = direct(m)) return *d;
    return pack(m, scratch, n_threads);
}

// The product of one node: dst slice (n x m, row-major) = op_b(B) * op_a(A) for each batch.
struct Product {
    int64_t m, n, k;
    bool trans_b, trans_a;  // applied to the slices' natural (rows x cols) matrices
};

Product product_of(const Tensor& node) {
    const Tensor& a = *node.src[0];
    const Tensor& b = *node.src[1];
    if (node.op == Op::MulMat) return {a.ne[1], b.ne[1], a.ne[0], false, true};  // B [n, k] * A^T
    return {a.ne[0], b.ne[0], a.ne[1], true, false};                             // B^T [n, k] * A [k, m]
}

float* dst_slice(const Tensor& dst, int64_t i2, int64_t i3) {
    return reinterpret_cast<float*>(static_cast<std::byte*>(dst.data) + i2 * dst.nb[2] + i3 * dst.nb[3]);
}

int dst_ld(const Tensor& dst) {
    return static_cast<int>(dst.ne[1] == 1 ? std::max<int64_t>(dst.ne[0], 1)
                                           : static_cast<int64_t>(dst.nb[1] / sizeof(float)));
}

// An empty sum (k == 0) is zero.
void zero_dst(const Tensor& dst) {
    for (int64_t i3 = 0; i3 < dst.ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < dst.ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < dst.ne[1]; ++i1) {
                std::memset(dst.element_ptr(0, i1, i2, i3), 0, static_cast<size_t>(dst.ne[0]) * sizeof(float));
            }
}

// Rows of dims 1..3 one stride apart: the tensor is one matrix of ne1*ne2*ne3 rows.
bool rows_uniform(const Tensor& t) {
    return t.nb[2] == static_cast<size_t>(t.ne[1]) * t.nb[1] && t.nb[3] == static_cast<size_t>(t.ne[2]) * t.nb[2];
}

// mul_mat of a single 2-D a with a batch of b laid out as one matrix: one sgemm for all batches.
bool one_call_mul_mat(const Tensor& node) {
    const Tensor& a = *node.src[0];
    const Tensor& b = *node.src[1];
    return node.op == Op::MulMat && a.ne[2] * a.ne[3] == 1 && b.ne[2] * b.ne[3] > 1 && rows_uniform(b) &&
           rows_uniform(node) && b.nrows() <= kIntMax && leading_dim(node.nb[1], node.ne[0]).has_value();
}

Status compute_one_call(const Tensor& node, const Product& p, Workspace& ws, int n_threads) {
    const Tensor& a = *node.src[0];
    const Tensor& b = *node.src[1];
    XB_ASSIGN_OR_RETURN(GemmOperand xa, prepare(slice(a, 0, 0), ws.a, n_threads));
    const Matrix all_b{static_cast<const std::byte*>(b.data), b.type, b.ne[0], b.nrows(), b.nb[0], b.nb[1]};
    XB_ASSIGN_OR_RETURN(GemmOperand xb, prepare(all_b, ws.b, n_threads));
    const int rows = static_cast<int>(node.nrows());
    const int ldc = static_cast<int>(node.nb[1] / sizeof(float));
    parallel_sgemm(xb, p.trans_b, xa, p.trans_a, rows, static_cast<int>(p.m), static_cast<int>(p.k),
                   dst_slice(node, 0, 0), ldc, n_threads);
    return Status::ok();
}

}  // namespace

Result<float*> Scratch::floats(size_t count) {
    if (count > SIZE_MAX / sizeof(float)) {
        return Status(StatusCode::OutOfMemory, "BLAS: scratch of " + std::to_string(count) + " floats is too large");
    }
    const size_t bytes = std::max<size_t>(count * sizeof(float), 1);
    if (bytes > memory_.size()) {
        memory_ = AlignedBytes();  // free the old block first: only one is needed at a time
        memory_ = AlignedBytes(bytes, kScratchAlignment);
        if (memory_.data() == nullptr) {
            return Status(StatusCode::OutOfMemory, "BLAS: cannot allocate " + std::to_string(bytes) +
                                                       " bytes of scratch for converted operands");
        }
    }
    return reinterpret_cast<float*>(memory_.data());
}

bool matmul_supported(const Tensor& node) {
    if (node.op != Op::MulMat && node.op != Op::OutProd) return false;
    const Tensor* a = node.src[0];
    const Tensor* b = node.src[1];
    if (a == nullptr || b == nullptr || !is_operand_type(a->type) || !is_operand_type(b->type)) return false;
    if (a->ne[2] <= 0 || a->ne[3] <= 0 || b->ne[2] % a->ne[2] != 0 || b->ne[3] % a->ne[3] != 0) return false;
    const Product p = product_of(node);
    const int64_t b_k = node.op == Op::MulMat ? b->ne[0] : b->ne[1];
    if (b_k != p.k || node.ne[2] != b->ne[2] || node.ne[3] != b->ne[3]) return false;
    if (p.m > kIntMax || p.n > kIntMax || p.k > kIntMax) return false;
    if (node.type != DType::F32 || node.ne[0] != p.m || node.ne[1] != p.n) return false;
    // sgemm writes whole rows of the result: its elements must be packed.
    if (node.nb[0] != sizeof(float)) return false;
    return node.ne[1] == 1 || leading_dim(node.nb[1], node.ne[0]).has_value();
}

Status compute_matmul(const Tensor& node, Workspace& ws, int n_threads) {
    const Tensor& a = *node.src[0];
    const Tensor& b = *node.src[1];
    const Product p = product_of(node);
    if (node.is_empty()) return Status::ok();
    if (p.k == 0) {
        zero_dst(node);
        return Status::ok();
    }
    if (one_call_mul_mat(node)) return compute_one_call(node, p, ws, n_threads);

    const int64_t r2 = b.ne[2] / a.ne[2];
    const int64_t r3 = b.ne[3] / a.ne[3];
    const int ldc = dst_ld(node);
    // a's slice (i02, i03) serves b's batches i2 / r2 == i02, i3 / r3 == i03: convert it once.
    for (int64_t i03 = 0; i03 < a.ne[3]; ++i03) {
        for (int64_t i02 = 0; i02 < a.ne[2]; ++i02) {
            XB_ASSIGN_OR_RETURN(GemmOperand xa, prepare(slice(a, i02, i03), ws.a, n_threads));
            for (int64_t i3 = i03 * r3; i3 < (i03 + 1) * r3; ++i3) {
                for (int64_t i2 = i02 * r2; i2 < (i02 + 1) * r2; ++i2) {
                    XB_ASSIGN_OR_RETURN(GemmOperand xb, prepare(slice(b, i2, i3), ws.b, n_threads));
                    parallel_sgemm(xb, p.trans_b, xa, p.trans_a, static_cast<int>(p.n), static_cast<int>(p.m),
                                   static_cast<int>(p.k), dst_slice(node, i2, i3), ldc, n_threads);
                }
            }
        }
    }
    return Status::ok();
}

}  // namespace xb::blas
