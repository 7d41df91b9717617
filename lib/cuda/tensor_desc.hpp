// TensorDesc: what a kernel knows of a tensor (device address, type, shape, byte strides), passed
// to kernels by value, and the index arithmetic over it. The arithmetic is XB_HD (host and device)
// so that the stride handling the kernels rely on is unit-tested on the CPU.
//
// Logical order is ggml's: dim 0 fastest. Every index is 64-bit.
#pragma once

#include <array>
#include <cstdint>
#include <cstddef>

#include "core/dtype.hpp"
#include "core/host_device.hpp"
#include "core/tensor.hpp"

namespace xb::cuda {

struct TensorDesc {
    char* data = nullptr;  // address of element (0, 0, 0, 0)
    DType type = DType::F32;
    int64_t ne[kMaxDims] = {1, 1, 1, 1};
    int64_t nb[kMaxDims] = {0, 0, 0, 0};
};

// Coordinates of one element, i[0] along dim 0.
struct Index4 {
    int64_t i[kMaxDims];
};

// Bytes of one element (dtype_traits is a host table; kernels need this on the device).
XB_HD int64_t element_bytes(DType t) {
    switch (t) {
        case DType::F32: return 4;
        case DType::F16: return 2;
        case DType::BF16: return 2;
        case DType::I32: return 4;
        case DType::I64: return 8;
        default: return 0;  // quantized types: kernels address whole blocks (kernels_quant.cu)
    }
}

XB_HD int64_t element_count(const TensorDesc& t) { return t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3]; }
XB_HD int64_t row_count(const TensorDesc& t) { return t.ne[1] * t.ne[2] * t.ne[3]; }

// The coordinates of element `flat` (0 <= flat < element_count) in logical order.
XB_HD Index4 unravel(const TensorDesc& t, int64_t flat) {
    Index4 idx;
    idx.i[0] = flat % t.ne[0];
    flat /= t.ne[0];
    idx.i[1] = flat % t.ne[1];
    flat /= t.ne[1];
    idx.i[2] = flat % t.ne[2];
    idx.i[3] = flat / t.ne[2];
    return idx;
}

// The coordinates of element 0 of row `row` (rows numbered with dim 1 fastest).
XB_HD Index4 row_start(const TensorDesc& t, int64_t row) {
    Index4 idx;
    idx.i[0] = 0;
    idx.i[1] = row % t.ne[1];
    row /= t.ne[1];
    idx.i[2] = row % t.ne[2];
    idx.i[3] = row / t.ne[2];
    return idx;
}

XB_HD int64_t byte_offset(const TensorDesc& t, const Index4& idx) {
    return idx.i[0] * t.nb[0] + idx.i[1] * t.nb[1] + idx.i[2] * t.nb[2] + idx.i[3] * t.nb[3];
}

XB_HD char* element_address(const TensorDesc& t, const Index4& idx) { return t.data + byte_offset(t, idx); }

// The element of a tiled (broadcast) tensor that `idx` of a larger tensor reads: every coordinate
// wraps around `t`'s size (ggml's repeat rule).
XB_HD Index4 wrap(const TensorDesc& t, const Index4& idx) {
    Index4 w;
    for (int k = 0; k < kMaxDims; ++k) w.i[k] = idx.i[k] % t.ne[k];
    return w;
}

// `dim` may be a kernel's runtime value: a switch keeps the coordinates in registers, where
// idx.i[dim] would move the whole array to local memory.
XB_HD Index4 with_dim(Index4 idx, int dim, int64_t value) {
    switch (dim) {
        case 0: idx.i[0] = value; break;
        case 1: idx.i[1] = value; break;
        case 2: idx.i[2] = value; break;
        default: idx.i[3] = value; break;
    }
    return idx;
}

XB_HD int64_t at_dim(const Index4& idx, int dim) {
    switch (dim) {
        case 0: return idx.i[0];
        case 1: return idx.i[1];
        case 2: return idx.i[2];
        default: return idx.i[3];
    }
}

// --- host side ---------------------------------------------------------------------------------

inline TensorDesc describe(const Tensor& t) {
    TensorDesc d;
    d.data = static_cast<char*>(t.data);
    d.type = t.type;
    for (int k = 0; k < kMaxDims; ++k) {
        d.ne[k] = t.ne[k];
        d.nb[k] = static_cast<int64_t>(t.nb[k]);
    }
    return d;
}

// True when a kernel may move `t`'s elements two at a time with one load or store: a float type,
// dim 0 contiguous and of even length, and every row start aligned to two elements.
inline bool pairable(const TensorDesc& t) {
    if (t.type != DType::F32 && t.type != DType::F16 && t.type != DType::BF16) return false;
    const int64_t size = element_bytes(t.type);
    if (t.nb[0] != size || t.ne[0] % 2 != 0) return false;
    if (reinterpret_cast<uintptr_t>(t.data) % static_cast<uintptr_t>(2 * size) != 0) return false;
    for (int k = 1; k < kMaxDims; ++k) {
        if (t.ne[k] > 1 && t.nb[k] % (2 * size) != 0) return false;
    }
    return true;
}

// True when dim 0 of `t` is contiguous and every row starts at a multiple of `alignment` bytes, so
// that a kernel may read a row that many bytes at a time.
inline bool rows_aligned_to(const TensorDesc& t, int64_t alignment) {
    if (t.nb[0] != element_bytes(t.type) || reinterpret_cast<uintptr_t>(t.data) % static_cast<uintptr_t>(alignment) != 0) {
        return false;
    }
    for (int k = 1; k < kMaxDims; ++k) {
        if (t.ne[k] > 1 && t.nb[k] % alignment != 0) return false;
    }
    return true;
}
inline bool rows_aligned16(const TensorDesc& t) { return rows_aligned_to(t, 16); }

// True when a kernel may move `t`'s elements eight at a time (16 bytes): f16 or bf16, rows 16-byte
// aligned and contiguous, their length a multiple of eight. The 16-bit types need that width to
// reach the memory's speed; f32 reaches it with pairs.
inline bool octets_of_halves(const TensorDesc& t) {
    return (t.type == DType::F16 || t.type == DType::BF16) && t.ne[0] % 8 == 0 && rows_aligned16(t);
}

// How many elements a kernel may move per load or store of `t`: 8 (octets of 16-bit floats), 2
// (pairable) or 1. Octets are pairable too, so the least over a kernel's operands is one they all
// allow.
inline int access_width(const TensorDesc& t) { return octets_of_halves(t) ? 8 : pairable(t) ? 2 : 1; }

// A packed tensor of `type` and shape `ne` at `data` (scratch copies of operands).
inline TensorDesc packed_desc(void* data, DType type, const std::array<int64_t, kMaxDims>& ne) {
    TensorDesc d;
    d.data = static_cast<char*>(data);
    d.type = type;
    int64_t stride = element_bytes(type);
    for (int k = 0; k < kMaxDims; ++k) {
        d.ne[k] = ne[k];
        d.nb[k] = stride;
        stride *= ne[k];
    }
    return d;
}

}  // namespace xb::cuda
