#include "cpu_kernels/matmul_tiles.hpp"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace xb::cpu_kernels {

const MatmulTiles& matmul_tiles(Isa isa) {
    return table_for_isa(isa, "matmul_tiles", &matmul_tiles_scalar, &matmul_tiles_avx2, &matmul_tiles_avx512);
}

namespace {

// AVX512-BF16 from cpuid (leaf 7, sub-leaf 1, EAX bit 5): not every compiler's
// __builtin_cpu_supports knows the name.
bool has_avx512_bf16() {
#if defined(__x86_64__) || defined(__i386__)
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) != 0 && (eax & (1u << 5)) != 0;
#else
    return false;
#endif
}

}  // namespace

const Bf16GemmKernel* bf16_gemm_kernel() {
    static const Bf16GemmKernel* kernel =
        active_isa() == Isa::Avx512 && has_avx512_bf16() ? &bf16_gemm_avx512() : nullptr;
    return kernel;
}

const char* bf16_products_description() {
    return bf16_gemm_kernel() != nullptr ? "bf16 products by AVX512-BF16 (activations rounded to bf16)"
                                         : "bf16 products by the f32 kernels";
}

const MatmulTiles& matmul_tiles() {
    static const MatmulTiles& active = matmul_tiles(active_isa());
    return active;
}

bool f32_rows_in_place(const Tensor& t) {
    return t.type == DType::F32 && t.nb[0] == sizeof(float) && t.view_offs % sizeof(float) == 0 &&
           t.nb[1] % sizeof(float) == 0 && t.nb[2] % sizeof(float) == 0 && t.nb[3] % sizeof(float) == 0;
}

bool pack_typed_rows(const GemmPackers& pack, DType type, const std::byte* const* rows, int count, int64_t len, float* out) {
    if (type != DType::F32 && type != DType::F16 && type != DType::BF16) return false;
    for (int i = 0; i < count; ++i) {
        if (reinterpret_cast<uintptr_t>(rows[i]) % type_size(type) != 0) return false;  // the packers read whole elements
    }
    if (type == DType::F32) {
        const float* f32[kMaxPanelRows];
        for (int i = 0; i < count; ++i) f32[i] = reinterpret_cast<const float*>(rows[i]);
        pack.f32(f32, count, len, out);
    } else {
        const uint16_t* half[kMaxPanelRows];
        for (int i = 0; i < count; ++i) half[i] = reinterpret_cast<const uint16_t*>(rows[i]);
        (type == DType::F16 ? pack.f16 : pack.bf16)(half, count, len, out);
    }
    return true;
}

void load_row_f32(DType t, const std::byte* src, size_t stride, int64_t n, int64_t padded, float* dst) {
    if (stride == type_size(t) && t == DType::F32) {
        std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    } else if (stride == type_size(t) && t == DType::F16) {
        f16_to_f32_row(reinterpret_cast<const uint16_t*>(src), dst, n);
    } else if (stride == type_size(t) && t == DType::BF16) {
        bf16_to_f32_row(reinterpret_cast<const uint16_t*>(src), dst, n);
    } else {
        for (int64_t i = 0; i < n; ++i) dst[i] = load_as_f32(t, src + static_cast<size_t>(i) * stride);
    }
    std::fill(dst + n, dst + padded, 0.0f);
}

}  // namespace xb::cpu_kernels
