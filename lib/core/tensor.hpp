// Tensor: plain metadata for an n-dimensional array (up to 4 dims) and the op that computes it.
//
// Tensors are owned by a Context (an arena) and never copied or moved: graph algorithms key on their
// addresses. Their data lives in a backend Buffer (or in the context's own memory for tests).
// `nb[i]` is the stride of dim i in bytes; views, reshapes and permutations share storage with
// `view_src` at byte offset `view_offs`.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/dtype.hpp"
#include "core/op.hpp"

namespace xb {

class Buffer;
class Context;

inline constexpr int kMaxDims = 4;
inline constexpr int kMaxSrc = 10;
inline constexpr int kMaxOpParams = 16;  // 32-bit words

enum TensorFlag : uint32_t {
    kFlagInput = 1u << 0,   // set by the user before compute (the allocator never reuses it)
    kFlagOutput = 1u << 1,  // read by the user after compute (the allocator never frees it)
    kFlagParam = 1u << 2,   // a trainable parameter: a graph node even when its op is None
};

struct Tensor {
    Tensor() = default;
    Tensor(const Tensor&) = delete;
    Tensor& operator=(const Tensor&) = delete;

    DType type = DType::F32;
    std::array<int64_t, kMaxDims> ne{1, 1, 1, 1};  // elements per dim
    std::array<size_t, kMaxDims> nb{};             // bytes between consecutive indices of each dim

    Op op = Op::None;
    std::array<int32_t, kMaxOpParams> op_params{};  // read and written only through core/op_params.hpp
    std::array<Tensor*, kMaxSrc> src{};

    Tensor* view_src = nullptr;  // the tensor whose storage this one aliases
    size_t view_offs = 0;        // byte offset into view_src's storage

    uint32_t flags = 0;
    std::string name;

    void* data = nullptr;      // set once the tensor is allocated
    Buffer* buffer = nullptr;  // the buffer holding `data` (non-owning)
    Context* ctx = nullptr;    // the arena that owns this tensor (non-owning back-link)

    // --- shape queries ---
    int64_t nelements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
    int64_t nrows() const { return ne[1] * ne[2] * ne[3]; }
    // Bytes spanned from the first to one past the last element (with strides).
    size_t nbytes() const;
    // Bytes of one row of ne[0] elements stored contiguously.
    size_t row_bytes() const { return row_size(type, ne[0]); }
    int n_dims() const;  // highest dim with ne > 1, plus one (at least 1)

    bool is_contiguous() const;         // packed, in order, no gaps
    bool is_contiguous_rows() const;    // each row is packed (nb[0] == element size)
    bool is_transposed() const { return nb[0] > nb[1]; }
    bool is_permuted() const;           // strides are not increasing
    bool is_view() const { return view_src != nullptr; }
    bool is_empty() const { return nelements() == 0; }

    // --- flags ---
    bool is_input() const { return flags & kFlagInput; }
    bool is_output() const { return flags & kFlagOutput; }
    bool is_param() const { return flags & kFlagParam; }
    void set_input() { flags |= kFlagInput; }
    void set_output() { flags |= kFlagOutput; }
    void set_param() { flags |= kFlagParam; }

    // --- element access (host memory only) ---
    std::byte* element_ptr(int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) const {
        return static_cast<std::byte*>(data) + i0 * nb[0] + i1 * nb[1] + i2 * nb[2] + i3 * nb[3];
    }

    // The name, or "unnamed <op>" when it has none; for messages.
    std::string display_name() const;
    // "[4, 3, 1, 1] f32"
    std::string shape_string() const;
    // The op with its sub-op where it has one: "mul_mat", "unary(silu)", "glu(swiglu)".
    std::string op_label() const;
};

// Contiguous strides for a tensor of this type and shape.
std::array<size_t, kMaxDims> contiguous_strides(DType type, const std::array<int64_t, kMaxDims>& ne);

// Nodes that no backend computes: leafs, views and empty results.
bool computes_nothing(const Tensor& node);

bool same_shape(const Tensor& a, const Tensor& b);
// Same type, shape and strides: bytes can be copied one-to-one.
bool same_layout(const Tensor& a, const Tensor& b);
// b can be tiled to a's shape: every dim of a is a multiple of b's (ggml_can_repeat).
bool can_repeat(const Tensor& b, const Tensor& a);
// b can be tiled to the shape ne: every dim of ne is a multiple of b's.
bool can_repeat(const Tensor& b, const std::array<int64_t, kMaxDims>& ne);

}  // namespace xb
