#include "cuda/quant_products.hpp"

#include "core/quant_int_dot.hpp"
#include "cuda/gemm_plan.hpp"

namespace xb::cuda {

namespace {

// Every row of `t` (a quantized tensor) starts at a multiple of `alignment` bytes.
bool rows_aligned(const Tensor& t, uintptr_t alignment) {
    if (reinterpret_cast<uintptr_t>(t.data) % alignment != 0) return false;
    for (int d = 1; d < kMaxDims; ++d) {
        if (t.ne[d] > 1 && t.nb[d] % alignment != 0) return false;
    }
    return true;
}

}  // namespace

bool is_quant_product(const Tensor& dst) {
    return dst.op == Op::MulMat && dst.src[0] != nullptr && is_quantized(dst.src[0]->type);
}

bool has_wide_units(DType t) { return t == DType::Q4_K || t == DType::Q5_K; }

// The quants of q4_K and q5_K sit 16 bytes into their blocks, whose sizes (144, 176) are multiples
// of 16: 16-byte rows make every unit's quants 16-byte aligned.
bool wide_loads_usable(const Tensor& a) { return has_wide_units(a.type) && rows_aligned(a, 16); }

QuantizedColumns quantized_columns(int64_t columns, int64_t k) {
    const auto values = static_cast<size_t>(columns) * static_cast<size_t>(k);
    QuantizedColumns q;
    q.scales_offset = align_scratch(values);
    q.bytes = q.scales_offset + align_scratch(values / kQ8Block * sizeof(Q8Scale));
    return q;
}

QuantProductPlan plan_quant_product(const Tensor& dst) {
    const Tensor& a = *dst.src[0];
    QuantProductPlan p;
    p.k = a.ne[0];
    p.rows = dst.ne[0];
    p.columns = dst.ne[1];
    p.batches = dst.ne[2] * dst.ne[3];
    p.r2 = dst.ne[2] / a.ne[2];
    p.r3 = dst.ne[3] / a.ne[3];
    if (p.columns > kMatVecMaxColumns) {
        p.path = QuantProductPath::Tiles;
        return p;
    }
    p.path = QuantProductPath::MatVec;
    p.wide_loads = wide_loads_usable(a);
    p.quantized = quantized_columns(p.columns * p.batches, p.k);
    p.scratch_bytes = p.quantized.bytes;
    return p;
}

}  // namespace xb::cuda
