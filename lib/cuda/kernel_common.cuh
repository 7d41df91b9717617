// Device helpers shared by the kernels: grid-stride indices, typed element access through
// TensorDesc, warp and block reductions, and the data-error report.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "core/dtype.hpp"
#include "cuda/kernel_errors.hpp"
#include "cuda/launch_config.hpp"
#include "cuda/tensor_desc.hpp"

namespace xb::cuda {

// --- grid-stride loops: for (int64_t i = thread_index(); i < n; i += thread_count()) -------------

__device__ __forceinline__ int64_t thread_index() {
    return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t thread_count() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// --- row segments (launch_config.hpp): for (s = blockIdx.x; s < grid.count; s += gridDim.x) ---------

struct RowSegment {
    Index4 row;            // coordinates of the row's element 0
    int64_t begin, end;    // the segment's range along dim 0
};

__device__ __forceinline__ RowSegment row_segment(const TensorDesc& shape, const SegmentGrid& grid, int64_t s) {
    const int64_t row = s / grid.per_row;
    RowSegment seg;
    seg.row = row_start(shape, row);
    seg.begin = (s - row * grid.per_row) * kSegmentLength;
    seg.end = seg.begin + kSegmentLength < grid.row_length ? seg.begin + kSegmentLength : grid.row_length;
    return seg;
}

// Element i0 of a row that starts at `row` (a byte address) in a tensor of stride nb0.
__device__ __forceinline__ const char* at(const char* row, int64_t i0, int64_t nb0) { return row + i0 * nb0; }
__device__ __forceinline__ char* at(char* row, int64_t i0, int64_t nb0) { return row + i0 * nb0; }

// --- element access --------------------------------------------------------------------------------

__device__ __forceinline__ float load_f32(const TensorDesc& t, const Index4& idx) {
    return load_as_f32(t.type, element_address(t, idx));
}
__device__ __forceinline__ void store_f32(const TensorDesc& t, const Index4& idx, float v) {
    store_from_f32(t.type, element_address(t, idx), v);
}

// Address of row (i1, i2, i3) of a tensor (element 0 of the row; for quantized types, its first block).
__device__ __forceinline__ const char* row_address(const TensorDesc& t, int64_t i1, int64_t i2, int64_t i3) {
    return t.data + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
}

// The outputs of a mat-vec kernel (mul_mat with one column of b), one warp each in a warp-stride
// loop: f(i, i2, i3) for every dst[i, 0, i2, i3]; every lane of the warp calls it.
template <typename F>
__device__ __forceinline__ void for_each_warp_output(const TensorDesc& dst, F f) {
    const int64_t warps_per_block = blockDim.x / kWarpSize;
    const int64_t outputs = dst.ne[0] * dst.ne[2] * dst.ne[3];
    for (int64_t o = static_cast<int64_t>(blockIdx.x) * warps_per_block + threadIdx.x / kWarpSize; o < outputs;
         o += static_cast<int64_t>(gridDim.x) * warps_per_block) {
        f(o % dst.ne[0], (o / dst.ne[0]) % dst.ne[2], o / dst.ne[0] / dst.ne[2]);
    }
}

// Eight consecutive f16 or bf16 elements with one 16-byte load (p 16-byte aligned), as f32.
__device__ __forceinline__ void load8_half_f32(DType t, const char* p, float out[8]) {
    const uint4 u = *reinterpret_cast<const uint4*>(p);
    const uint32_t words[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        if (t == DType::F16) {
            const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&words[q]));
            out[2 * q] = f.x;
            out[2 * q + 1] = f.y;
        } else {  // bf16, little-endian: element 0 in the low half
            out[2 * q] = bits_float(words[q] << 16);
            out[2 * q + 1] = bits_float(words[q] & 0xffff0000u);
        }
    }
}

// The same eight elements back from f32 (f16 rounded to nearest, bf16 as the CPU rounds it).
__device__ __forceinline__ void store8_half_from_f32(DType t, char* p, const float v[8]) {
    uint32_t words[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        if (t == DType::F16) {
            const __half2 h = __floats2half2_rn(v[2 * q], v[2 * q + 1]);
            words[q] = *reinterpret_cast<const uint32_t*>(&h);
        } else {
            words[q] = static_cast<uint32_t>(f32_to_bf16(v[2 * q])) | (static_cast<uint32_t>(f32_to_bf16(v[2 * q + 1])) << 16);
        }
    }
    *reinterpret_cast<uint4*>(p) = make_uint4(words[0], words[1], words[2], words[3]);
}

// Two consecutive elements of a pairable tensor (tensor_desc.hpp) with one load or store: for the
// 16-bit types that doubles the bytes each memory instruction moves, which is what limits them.
__device__ __forceinline__ float2 load_pair_f32(DType t, const char* p) {
    switch (t) {
        case DType::F32: return *reinterpret_cast<const float2*>(p);
        case DType::F16: return __half22float2(*reinterpret_cast<const __half2*>(p));
        case DType::BF16: {
            const uint32_t u = *reinterpret_cast<const uint32_t*>(p);  // little-endian: element 0 low
            return make_float2(bits_float(u << 16), bits_float(u & 0xffff0000u));
        }
        default: return make_float2(load_as_f32(t, p), load_as_f32(t, p + element_bytes(t)));
    }
}
__device__ __forceinline__ void store_pair_from_f32(DType t, char* p, float2 v) {
    switch (t) {
        case DType::F32: *reinterpret_cast<float2*>(p) = v; return;
        case DType::F16: *reinterpret_cast<__half2*>(p) = __floats2half2_rn(v.x, v.y); return;
        case DType::BF16:
            *reinterpret_cast<uint32_t*>(p) =
                static_cast<uint32_t>(f32_to_bf16(v.x)) | (static_cast<uint32_t>(f32_to_bf16(v.y)) << 16);
            return;
        default:
            store_from_f32(t, p, v.x);
            store_from_f32(t, p + element_bytes(t), v.y);
            return;
    }
}

// One element from `src` to `dst`: bit for bit when the types are equal (integers too), through
// f32 between float types.
__device__ __forceinline__ void copy_element(DType src_type, const char* src, DType dst_type, char* dst) {
    if (src_type != dst_type) {
        store_from_f32(dst_type, dst, load_as_f32(src_type, src));
        return;
    }
    switch (element_bytes(src_type)) {
        case 2: *reinterpret_cast<uint16_t*>(dst) = *reinterpret_cast<const uint16_t*>(src); return;
        case 4: *reinterpret_cast<uint32_t*>(dst) = *reinterpret_cast<const uint32_t*>(src); return;
        case 8: *reinterpret_cast<uint64_t*>(dst) = *reinterpret_cast<const uint64_t*>(src); return;
        default: return;
    }
}

// Zero bits: 0.0 in every float type, 0 in the integer types.
__device__ __forceinline__ void zero_element(DType type, char* dst) {
    switch (element_bytes(type)) {
        case 2: *reinterpret_cast<uint16_t*>(dst) = 0; return;
        case 4: *reinterpret_cast<uint32_t*>(dst) = 0; return;
        case 8: *reinterpret_cast<uint64_t*>(dst) = 0; return;
        default: return;
    }
}

// An i32 or i64 index at `idx` of an index tensor.
__device__ __forceinline__ int64_t load_index(const TensorDesc& t, const Index4& idx) {
    const char* p = element_address(t, idx);
    if (t.type == DType::I64) return *reinterpret_cast<const int64_t*>(p);
    return *reinterpret_cast<const int32_t*>(p);
}

// --- reductions --------------------------------------------------------------------------------------

struct SumOp {
    template <typename T>
    __device__ __forceinline__ T operator()(T a, T b) const {
        return a + b;
    }
};
struct MaxOp {
    __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
// The max of unsigned words: of magnitude_bits, a largest magnitude that keeps a NaN (fmaxf drops it).
struct MaxBitsOp {
    __device__ __forceinline__ uint32_t operator()(uint32_t a, uint32_t b) const { return max(a, b); }
};

// Every lane of the warp gets the reduction of the warp's values.
template <typename T, typename Op>
__device__ __forceinline__ T warp_reduce(T v, Op op) {
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

// Every thread of the block gets the reduction of the block's values. The block's size is a
// multiple of the warp size; `scratch` holds one value per warp and may be reused by the next call
// (the leading barrier keeps a fast warp from overwriting what a slow one still reads). Every
// thread of the block must call it.
template <typename T, typename Op>
__device__ T block_reduce(T v, Op op, T identity, T* scratch) {
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
    const int n_warps = static_cast<int>(blockDim.x) / kWarpSize;
    v = warp_reduce(v, op);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < n_warps ? scratch[lane] : identity;
    return warp_reduce(v, op);
}

// --- data errors -------------------------------------------------------------------------------------

// Records an index out of [0, bound) in the backend's error record; the first report wins.
__device__ __forceinline__ void report_index_error(KernelErrorRecord* record, int slot, int64_t value, int64_t bound) {
    if (atomicCAS(&record->kind, kKernelErrorNone, kKernelErrorIndexOutOfRange) == kKernelErrorNone) {
        record->slot = slot;
        record->value = value;
        record->bound = bound;
    }
}

}  // namespace xb::cuda
