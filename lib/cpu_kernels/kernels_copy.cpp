// Copy and layout kernels: dup/cont/cpy with type conversion, repeat, concat, pad, arange,
// get_rows and set_rows.
//
// Elements move between any two layouts through strides. Equal types are copied bit for bit (so
// i32 and i64 survive unchanged); float types convert through f32. Packed runs use convert_row.
#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <utility>

#include "core/op_params.hpp"
#include "core/quant.hpp"
#include "cpu_kernels/kernels.hpp"
#include "cpu_kernels/row_kernels.hpp"
#include "cpu_kernels/row_iter.hpp"

namespace xb::cpu_kernels {

namespace {

bool numeric(DType t) { return is_float_type(t) || is_quantized(t); }
bool convertible(DType from, DType to) { return from == to || (numeric(from) && numeric(to)); }

// Reports (once, from thread 0) that a kernel cannot convert between the types of its tensors.
void report_not_convertible(const ComputeParams& p, const char* op, DType from, DType to) {
    if (p.ith != 0) return;
    p.report(Status(StatusCode::NotSupported,
                    std::string(op) + ": cannot convert " + dtype_name(from) + " to " + dtype_name(to)));
}

template <typename T>
void copy_strided_bits(const std::byte* s, size_t ss, std::byte* d, size_t ds, int64_t n) {
    for (int64_t i = 0; i < n; ++i) std::memcpy(d + i * ds, s + i * ss, sizeof(T));
}

// A run with a quantized side (whole blocks, consecutive) and a strided float side: through f32, a
// chunk of 256 elements (whole blocks of every type) at a time.
void copy_quantized_run(DType st, const std::byte* s, size_t ss, DType dt, std::byte* d, size_t ds, int64_t n) {
    constexpr int64_t kChunk = 256;
    float buf[kChunk];
    for (int64_t c = 0; c < n; c += kChunk) {
        const int64_t len = std::min(kChunk, n - c);
        if (is_quantized(st)) {
            dequantize_row(st, s + row_size(st, c), buf, len);
        } else {
            for (int64_t i = 0; i < len; ++i) buf[i] = load_as_f32(st, s + (c + i) * static_cast<int64_t>(ss));
        }
        if (is_quantized(dt)) {
            quantize_row(dt, buf, d + row_size(dt, c), len);
        } else {
            for (int64_t i = 0; i < len; ++i) store_from_f32(dt, d + (c + i) * static_cast<int64_t>(ds), buf[i]);
        }
    }
}

// Copies n elements from a strided source run to a strided destination run. The types must be
// convertible (see convertible()); a quantized side holds whole blocks.
void copy_run(DType st, const std::byte* s, size_t ss, DType dt, std::byte* d, size_t ds, int64_t n) {
    if (n <= 0) return;
    const size_t s_size = type_size(st);
    const size_t d_size = type_size(dt);
    if ((ss == s_size || n == 1) && (ds == d_size || n == 1)) {
        static_cast<void>(convert_row(st, s, dt, d, n));
        return;
    }
    if (is_quantized(st) || is_quantized(dt)) return copy_quantized_run(st, s, ss, dt, d, ds, n);
    if (st == dt) {
        switch (s_size) {
            case 2: return copy_strided_bits<uint16_t>(s, ss, d, ds, n);
            case 4: return copy_strided_bits<uint32_t>(s, ss, d, ds, n);
            case 8: return copy_strided_bits<uint64_t>(s, ss, d, ds, n);
            default:
                for (int64_t i = 0; i < n; ++i) std::memcpy(d + i * ds, s + i * ss, s_size);
                return;
        }
    }
    for (int64_t i = 0; i < n; ++i) store_from_f32(dt, d + i * ds, load_as_f32(st, s + i * ss));
}

// Copies the n elements of a run of `src` starting at `s` into `dst` at `d`, strides from the tensors.
void copy_run(const Tensor& src, const std::byte* s, const Tensor& dst, std::byte* d, int64_t n) {
    copy_run(src.type, s, src.nb[0], dst.type, d, dst.nb[0], n);
}

// Sets n elements of a strided run to zero bits (0.0 in every float type).
void zero_run(const Tensor& t, std::byte* d, int64_t n) {
    if (n <= 0) return;
    const size_t size = type_size(t.type);
    if (t.nb[0] == size) {
        std::memset(d, 0, static_cast<size_t>(n) * size);
        return;
    }
    for (int64_t i = 0; i < n; ++i) std::memset(d + i * t.nb[0], 0, size);
}

// A position in a tensor's logical (row-major, i0 fastest) element order.
struct Cursor {
    std::array<int64_t, kMaxDims> i{};

    void seek(const Tensor& t, int64_t flat) {
        for (int k = 0; k < kMaxDims; ++k) {
            i[k] = flat % t.ne[k];
            flat /= t.ne[k];
        }
    }
    std::byte* ptr(const Tensor& t) const { return t.element_ptr(i[0], i[1], i[2], i[3]); }
    int64_t left_in_row(const Tensor& t) const { return t.ne[0] - i[0]; }
    // Steps n elements forward; n must not pass the end of the current row.
    void advance(const Tensor& t, int64_t n) {
        i[0] += n;
        for (int k = 0; k + 1 < kMaxDims && i[k] == t.ne[k]; ++k) {
            i[k] = 0;
            ++i[k + 1];
        }
    }
};

// --- get_rows / set_rows helpers -------------------------------------------------------------------

int64_t load_index(const Tensor& idx, int64_t i0, int64_t i1, int64_t i2) {
    const std::byte* p = idx.element_ptr(i0, i1, i2);
    if (idx.type == DType::I64) {
        int64_t v;
        std::memcpy(&v, p, sizeof v);
        return v;
    }
    int32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

void report_index(const ComputeParams& p, const char* op, int64_t index, int64_t n) {
    p.report(Status(StatusCode::OutOfRange, std::string(op) + ": index " + std::to_string(index) +
                                                " out of range [0, " + std::to_string(n) + ")"));
}

// Copies with a quantized side go a row at a time (rows of equal length on both sides: the builders
// check it), so that no thread's share cuts a block.
void copy_rows(const ComputeParams& p, const Tensor& src, Tensor& dst) {
    const auto range = p.split(dst.nrows());
    for (int64_t row = range.begin; row < range.end; ++row) {
        copy_run(src, row_ptr(src, row_index(src, row)), dst, row_ptr(dst, row_index(dst, row)), dst.ne[0]);
    }
}

// Whether the bytes src and dst span (first to last element) intersect.
bool overlaps(const Tensor& a, const Tensor& b) {
    auto span = [](const Tensor& t) {
        size_t last = type_size(t.type);
        for (int k = 0; k < kMaxDims; ++k) last += static_cast<size_t>(t.ne[k] - 1) * t.nb[k];
        const auto* begin = static_cast<const std::byte*>(t.data);
        return std::pair{begin, begin + last};
    };
    const auto [a0, a1] = span(a);
    const auto [b0, b1] = span(b);
    return a0 < b1 && b0 < a1;
}

// Whether cont/cpy from src to dst transposes each matrix of 32-bit elements: same type and
// shape, dst packed, src packed along dim 1 instead of dim 0 (cont of a transposed view).
bool is_transpose32(const Tensor& src, const Tensor& dst) {
    constexpr size_t kSize = 4;
    return src.type == dst.type && type_size(src.type) == kSize && !is_quantized(src.type) && dst.is_contiguous() &&
           src.nb[1] == kSize && src.nb[0] != kSize && src.nb[0] % kSize == 0 && src.ne == dst.ne;
}

// The transposition through the instruction set's kernel (register-blocked where it has one);
// threads take bands of rows of dst in every matrix.
void copy_transposed32(const ComputeParams& p, const Tensor& src, Tensor& dst) {
    constexpr int64_t kBand = 32;
    const RowKernels::Transpose32Fn transpose = row_kernels().transpose32;
    const int64_t bands = (dst.ne[1] + kBand - 1) / kBand;
    const auto range = p.split(bands * dst.ne[2] * dst.ne[3]);
    for (int64_t u = range.begin; u < range.end; ++u) {
        const int64_t i1 = (u % bands) * kBand;
        const int64_t i2 = (u / bands) % dst.ne[2];
        const int64_t i3 = u / bands / dst.ne[2];
        transpose(reinterpret_cast<const uint32_t*>(src.element_ptr(0, i1, i2, i3)), static_cast<int64_t>(src.nb[0] / 4),
                  reinterpret_cast<uint32_t*>(dst.element_ptr(0, i1, i2, i3)), static_cast<int64_t>(dst.nb[1] / 4),
                  std::min(kBand, dst.ne[1] - i1), dst.ne[0]);
    }
}

}  // namespace

void compute_copy(const ComputeParams& p, Tensor& dst) {
    const Tensor& src = *dst.src[0];
    if (!convertible(src.type, dst.type)) return report_not_convertible(p, op_name(dst.op), src.type, dst.type);
    const int64_t n = dst.nelements();
    if (n == 0 || src.nelements() != n) return;
    if (is_quantized(src.type) || is_quantized(dst.type)) return copy_rows(p, src, dst);
    // The transposition kernel needs src and dst apart (a cpy into overlapping storage keeps the
    // element order of the general path).
    if (is_transpose32(src, dst) && !overlaps(src, dst)) return copy_transposed32(p, src, dst);
    const auto range = p.split(n);
    if (range.begin >= range.end) return;

    // Both packed: element f sits at byte f * type_size in each.
    if (src.is_contiguous() && dst.is_contiguous()) {
        const std::byte* s = static_cast<const std::byte*>(src.data) + range.begin * type_size(src.type);
        std::byte* d = static_cast<std::byte*>(dst.data) + range.begin * type_size(dst.type);
        static_cast<void>(convert_row(src.type, s, dst.type, d, range.end - range.begin));
        return;
    }
    // Walk both logical orders together, one run at a time (a run ends where either row ends).
    Cursor sc;
    Cursor dc;
    sc.seek(src, range.begin);
    dc.seek(dst, range.begin);
    for (int64_t f = range.begin; f < range.end;) {
        const int64_t len = std::min({sc.left_in_row(src), dc.left_in_row(dst), range.end - f});
        copy_run(src, sc.ptr(src), dst, dc.ptr(dst), len);
        sc.advance(src, len);
        dc.advance(dst, len);
        f += len;
    }
}

void compute_repeat(const ComputeParams& p, Tensor& dst) {
    const Tensor& src = *dst.src[0];
    if (dst.is_empty()) return;
    if (src.type != dst.type) return report_not_convertible(p, "repeat", src.type, dst.type);
    const int64_t tile = src.ne[0];
    const auto range = p.split(dst.nrows());
    for (int64_t row = range.begin; row < range.end; ++row) {
        const RowIndex r = row_index(dst, row);
        const std::byte* s = row_ptr(src, broadcast_row(src, r));
        for (int64_t off = 0; off < dst.ne[0]; off += tile) copy_run(src, s, dst, row_ptr(dst, r, off), tile);
    }
}

void compute_concat(const ComputeParams& p, Tensor& dst) {
    const Tensor& a = *dst.src[0];
    const Tensor& b = *dst.src[1];
    if (dst.is_empty()) return;
    if (a.type != dst.type || b.type != dst.type) return report_not_convertible(p, "concat", a.type, dst.type);
    const int dim = ConcatParams::load(dst).dim;
    const auto range = p.split(dst.nrows());
    for (int64_t row = range.begin; row < range.end; ++row) {
        const RowIndex r = row_index(dst, row);
        if (dim == 0) {
            copy_run(a, row_ptr(a, r), dst, row_ptr(dst, r), a.ne[0]);
            copy_run(b, row_ptr(b, r), dst, row_ptr(dst, r, a.ne[0]), b.ne[0]);
            continue;
        }
        // The whole row comes from a or from b, decided by its coordinate along `dim`.
        std::array<int64_t, kMaxDims> i{0, r.i1, r.i2, r.i3};
        const Tensor* s = &a;
        if (i[dim] >= a.ne[dim]) {
            i[dim] -= a.ne[dim];
            s = &b;
        }
        copy_run(*s, s->element_ptr(0, i[1], i[2], i[3]), dst, row_ptr(dst, r), dst.ne[0]);
    }
}

void compute_pad(const ComputeParams& p, Tensor& dst) {
    const Tensor& src = *dst.src[0];
    if (dst.is_empty()) return;
    if (src.type != dst.type) return report_not_convertible(p, "pad", src.type, dst.type);
    const auto range = p.split(dst.nrows());
    for (int64_t row = range.begin; row < range.end; ++row) {
        const RowIndex r = row_index(dst, row);
        std::byte* d = row_ptr(dst, r);
        const bool inside = r.i1 < src.ne[1] && r.i2 < src.ne[2] && r.i3 < src.ne[3];
        const int64_t copied = inside ? src.ne[0] : 0;
        if (inside) copy_run(src, row_ptr(src, r), dst, d, copied);
        zero_run(dst, d + copied * static_cast<int64_t>(dst.nb[0]), dst.ne[0] - copied);
    }
}

void compute_arange(const ComputeParams& p, Tensor& dst) {
    const ArangeParams arange = ArangeParams::load(dst);
    const float start = arange.start;
    const float step = arange.step;
    const auto range = p.split(dst.nelements());
    for (int64_t i = range.begin; i < range.end; ++i) {
        store_from_f32(dst.type, dst.element_ptr(i), start + step * static_cast<float>(i));
    }
}

void compute_get_rows(const ComputeParams& p, Tensor& dst) {
    const Tensor& src = *dst.src[0];
    const Tensor& rows = *dst.src[1];
    if (dst.is_empty()) return;
    if (!convertible(src.type, dst.type)) return report_not_convertible(p, "get_rows", src.type, dst.type);
    const int64_t n_src_rows = src.ne[1];
    const auto range = p.split(dst.nrows());
    bool reported = false;  // one report per thread is enough: the first error wins anyway
    for (int64_t row = range.begin; row < range.end; ++row) {
        const RowIndex r = row_index(dst, row);  // (i10, i11, i12): which index, and its batch
        const int64_t index = load_index(rows, r.i1, r.i2, r.i3);
        if (index < 0 || index >= n_src_rows) {
            if (!std::exchange(reported, true)) report_index(p, "get_rows", index, n_src_rows);
            continue;
        }
        copy_run(src, src.element_ptr(0, index, r.i2, r.i3), dst, row_ptr(dst, r), dst.ne[0]);
    }
}

void compute_set_rows(const ComputeParams& p, Tensor& dst) {
    const Tensor& src = *dst.src[0];
    const Tensor& rows = *dst.src[1];
    if (src.is_empty()) return;
    if (!convertible(src.type, dst.type)) return report_not_convertible(p, "set_rows", src.type, dst.type);
    const int64_t n_dst_rows = dst.ne[1];
    // Each thread owns a range of dst rows (i1 fastest) and writes only those, so duplicate indices
    // never race and the last source row wins, as in a sequential loop. Thread 0 checks every index.
    const auto own = p.split(dst.nrows());
    bool reported = false;
    for (int64_t i3 = 0; i3 < src.ne[3]; ++i3) {
        for (int64_t i2 = 0; i2 < src.ne[2]; ++i2) {
            const int64_t plane = (i3 * dst.ne[2] + i2) * n_dst_rows;  // dst row number of (0, i2, i3)
            const bool mine = plane < own.end && plane + n_dst_rows > own.begin;
            if (!mine && p.ith != 0) continue;
            for (int64_t i = 0; i < src.ne[1]; ++i) {
                const int64_t index = load_index(rows, i, i2 % rows.ne[1], i3 % rows.ne[2]);
                if (index < 0 || index >= n_dst_rows) {
                    if (p.ith == 0 && !std::exchange(reported, true)) report_index(p, "set_rows", index, n_dst_rows);
                    continue;
                }
                if (plane + index < own.begin || plane + index >= own.end) continue;
                copy_run(src, src.element_ptr(0, i, i2, i3), dst, dst.element_ptr(0, index, i2, i3), src.ne[0]);
            }
        }
    }
}

}  // namespace xb::cpu_kernels
