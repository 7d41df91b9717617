// NumPy's .npy format: read and write arrays of f32, f16, i32 and i64 in C order (versions 1.0,
// 2.0 and 3.0 of the header are read; 1.0 is written, 2.0 when the header needs it). f64 arrays,
// numpy's default, are read as f32. numpy has no bf16: bf16 tensors are saved as f32.
//
// Shapes: numpy lists the outermost dim first, ggml the innermost; an array of shape (8, 64) is a
// tensor of ne [64, 8]. Errors name the file and the byte offset of the problem.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/status.hpp"
#include "core/tensor.hpp"

namespace xb {

struct NpyArray {
    DType type = DType::F32;
    std::vector<int64_t> shape;   // numpy order: outermost first; empty for a scalar
    std::vector<std::byte> data;  // C order, little-endian

    int64_t nelements() const;
    // The shape innermost first, padded with 1 to four dims (as Tensor::ne); InvalidArgument for
    // more than four dims.
    Result<std::array<int64_t, kMaxDims>> ne() const;
};

Result<NpyArray> read_npy(const std::string& path);
// `source` names the bytes in messages.
Result<NpyArray> decode_npy(std::span<const std::byte> bytes, const std::string& source);
Result<std::vector<std::byte>> encode_npy(const NpyArray& array);
Status write_npy(const std::string& path, const NpyArray& array);
// Whether numpy has `type` (f32, f16, i32, i64; not bf16 nor the quantized types).
bool npy_has_type(DType type);

}  // namespace xb
