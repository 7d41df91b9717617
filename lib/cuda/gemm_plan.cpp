#include "cuda/gemm_plan.hpp"

#include <climits>
#include <cstdint>
#include <optional>

namespace xb::cuda {

namespace {

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

int64_t elem(DType t) { return static_cast<int64_t>(type_size(t)); }

// The leading dimension cuBLAS can use in place, or nothing when the operand must be packed.
std::optional<int64_t> in_place_ld(const Tensor& t, DType input_type) {
    const int64_t size = elem(input_type);
    if (t.type != input_type) return std::nullopt;
    if (t.ne[0] > 1 && static_cast<int64_t>(t.nb[0]) != size) return std::nullopt;
    if (reinterpret_cast<uintptr_t>(t.data) % static_cast<uintptr_t>(size) != 0) return std::nullopt;
    for (int d = 2; d < kMaxDims; ++d) {
        if (t.ne[d] > 1 && static_cast<int64_t>(t.nb[d]) % size != 0) return std::nullopt;
    }
    if (t.ne[1] == 1) return t.ne[0];  // a single column: any row stride will do
    const int64_t nb1 = static_cast<int64_t>(t.nb[1]);
    if (nb1 % size != 0 || nb1 / size < t.ne[0] || !fits_int(nb1 / size)) return std::nullopt;
    return nb1 / size;
}

GemmOperand plan_operand(const Tensor& t, bool transposed, DType input_type, size_t& scratch) {
    GemmOperand op;
    op.tensor = &t;
    op.transposed = transposed;
    if (const auto ld = in_place_ld(t, input_type)) {
        op.ld = *ld;
        op.nb2 = static_cast<int64_t>(t.nb[2]);
        op.nb3 = static_cast<int64_t>(t.nb[3]);
        return op;
    }
    op.pack = true;
    op.ld = t.ne[0];
    op.nb2 = t.ne[0] * t.ne[1] * elem(input_type);
    op.nb3 = op.nb2 * t.ne[2];
    op.scratch_offset = scratch;
    op.scratch_bytes = static_cast<size_t>(t.nelements()) * type_size(input_type);
    scratch += align_scratch(op.scratch_bytes);
    return op;
}

// One stride (in elements) that steps through all ne2 * ne3 batches in order, when there is one.
std::optional<int64_t> flat_batch_stride(int64_t ne2, int64_t ne3, int64_t nb2, int64_t nb3, int64_t size) {
    int64_t stride = 0;
    if (ne3 == 1) {
        stride = nb2;
    } else if (ne2 == 1) {
        stride = nb3;
    } else if (nb3 == nb2 * ne2) {
        stride = nb2;
    } else {
        return std::nullopt;
    }
    if (stride % size != 0) return std::nullopt;
    return stride / size;
}

}  // namespace

size_t align_scratch(size_t bytes) { return (bytes + kScratchAlignment - 1) / kScratchAlignment * kScratchAlignment; }

DType gemm_input_type(DType ta, DType tb) {
    if (ta == tb) return ta;
    if ((ta == DType::F16 || ta == DType::BF16) && tb == DType::F32) return ta;
    return DType::F32;
}

bool gemm_supported(const Tensor& dst) {
    if (dst.op != Op::MulMat && dst.op != Op::OutProd) return false;
    const Tensor* a = dst.src[0];
    const Tensor* b = dst.src[1];
    if (a == nullptr || b == nullptr || !is_float(b->type)) return false;
    if (!is_float(a->type) && !(is_quantized(a->type) && dst.op == Op::MulMat)) return false;
    if (dst.type != DType::F32 || !dst.is_contiguous()) return false;
    if (a->ne[2] <= 0 || a->ne[3] <= 0 || dst.ne[2] % a->ne[2] != 0 || dst.ne[3] % a->ne[3] != 0) return false;
    const int64_t k = dst.op == Op::MulMat ? a->ne[0] : a->ne[1];
    // Operands that cannot be used in place are packed with ld = ne[0], which must fit too.
    return fits_int(dst.ne[0]) && fits_int(dst.ne[1]) && fits_int(k) && fits_int(a->ne[0]) && fits_int(b->ne[0]) &&
           fits_int(dst.ne[2] * dst.ne[3]);
}

bool uses_mat_vec(const Tensor& dst) {
    if (dst.op != Op::MulMat || dst.ne[1] != 1) return false;
    const DType a = dst.src[0]->type;
    return (a == DType::F16 || a == DType::BF16) && dst.src[1]->type == DType::F32;
}

GemmPlan plan_gemm(const Tensor& dst) {
    const Tensor& a = *dst.src[0];
    const Tensor& b = *dst.src[1];
    const bool mul_mat = dst.op == Op::MulMat;
    GemmPlan p;
    p.input_type = gemm_input_type(a.type, b.type);
    p.m = dst.ne[0];
    p.n = dst.ne[1];
    p.k = mul_mat ? a.ne[0] : a.ne[1];
    size_t scratch = 0;
    p.a = plan_operand(a, /*transposed=*/mul_mat, p.input_type, scratch);
    p.b = plan_operand(b, /*transposed=*/!mul_mat, p.input_type, scratch);
    p.c_ld = dst.ne[1] > 1 ? static_cast<int64_t>(dst.nb[1]) / 4 : dst.ne[0];
    p.batch2 = dst.ne[2];
    p.batch3 = dst.ne[3];
    p.r2 = dst.ne[2] / a.ne[2];
    p.r3 = dst.ne[3] / a.ne[3];

    if (p.batch_count() > 1) {
        const int64_t size = elem(p.input_type);
        const auto sa = flat_batch_stride(a.ne[2], a.ne[3], p.a.nb2, p.a.nb3, size);
        const auto sb = flat_batch_stride(b.ne[2], b.ne[3], p.b.nb2, p.b.nb3, size);
        const auto sc = flat_batch_stride(dst.ne[2], dst.ne[3], static_cast<int64_t>(dst.nb[2]),
                                          static_cast<int64_t>(dst.nb[3]), 4);
        if (p.r2 == 1 && p.r3 == 1 && sa && sb && sc) {
            p.batching = GemmBatching::Strided;
            p.stride_a = *sa;
            p.stride_b = *sb;
            p.stride_c = *sc;
        } else {
            p.batching = GemmBatching::Pointers;
            p.pointers_offset = scratch;
            scratch += align_scratch(3 * static_cast<size_t>(p.batch_count()) * sizeof(void*));
        }
    }
    p.scratch_bytes = scratch;
    return p;
}

}  // namespace xb::cuda
