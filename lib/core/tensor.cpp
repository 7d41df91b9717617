#include "core/tensor.hpp"

#include <algorithm>
#include <sstream>

#include "core/op_params.hpp"

namespace xb {

size_t Tensor::nbytes() const {
    for (int i = 0; i < kMaxDims; ++i) {
        if (ne[i] <= 0) return 0;
    }
    size_t bytes = 0;
    if (blck_size(type) == 1) {
        bytes = type_size(type);
        for (int i = 0; i < kMaxDims; ++i) bytes += static_cast<size_t>(ne[i] - 1) * nb[i];
    } else {
        bytes = static_cast<size_t>(ne[0] / blck_size(type)) * nb[0];
        for (int i = 1; i < kMaxDims; ++i) bytes += static_cast<size_t>(ne[i] - 1) * nb[i];
    }
    return bytes;
}

int Tensor::n_dims() const {
    for (int i = kMaxDims - 1; i >= 1; --i) {
        if (ne[i] > 1) return i + 1;
    }
    return 1;
}

bool Tensor::is_contiguous() const {
    // Dims of size 1 may have any stride: they are never stepped over.
    size_t expected = type_size(type);
    if (ne[0] != blck_size(type) && nb[0] != expected) return false;
    expected = row_size(type, ne[0]);
    for (int i = 1; i < kMaxDims; ++i) {
        if (ne[i] != 1) {
            if (nb[i] != expected) return false;
            expected *= static_cast<size_t>(ne[i]);
        }
    }
    return true;
}

bool Tensor::is_contiguous_rows() const { return ne[0] == 1 || nb[0] == type_size(type); }

bool Tensor::is_permuted() const { return nb[0] > nb[1] || nb[1] > nb[2] || nb[2] > nb[3]; }

std::string Tensor::display_name() const {
    if (!name.empty()) return name;
    return "unnamed " + op_label();
}

std::string Tensor::shape_string() const {
    std::ostringstream os;
    os << '[' << ne[0] << ", " << ne[1] << ", " << ne[2] << ", " << ne[3] << "] " << dtype_name(type);
    return os.str();
}

std::string Tensor::op_label() const {
    if (op == Op::Unary) return std::string("unary(") + unary_op_name(UnaryParams::load(*this).op) + ")";
    if (op == Op::Glu) return std::string("glu(") + glu_op_name(GluParams::load(*this).op) + ")";
    return op_name(op);
}

std::array<size_t, kMaxDims> contiguous_strides(DType type, const std::array<int64_t, kMaxDims>& ne) {
    std::array<size_t, kMaxDims> nb{};
    nb[0] = type_size(type);
    nb[1] = row_size(type, ne[0]);
    for (int i = 2; i < kMaxDims; ++i) nb[i] = nb[i - 1] * static_cast<size_t>(ne[i - 1]);
    return nb;
}

bool computes_nothing(const Tensor& node) { return node.op == Op::None || op_is_view(node.op) || node.is_empty(); }

bool same_shape(const Tensor& a, const Tensor& b) { return a.ne == b.ne; }

bool same_layout(const Tensor& a, const Tensor& b) {
    if (a.type != b.type || a.ne != b.ne) return false;
    for (int i = 0; i < kMaxDims; ++i) {
        if (a.ne[i] > 1 && a.nb[i] != b.nb[i]) return false;
    }
    return true;
}

bool can_repeat(const Tensor& b, const Tensor& a) { return can_repeat(b, a.ne); }

bool can_repeat(const Tensor& b, const std::array<int64_t, kMaxDims>& ne) {
    if (b.is_empty()) return std::find(ne.begin(), ne.end(), 0) != ne.end();
    for (int i = 0; i < kMaxDims; ++i) {
        if (ne[i] % b.ne[i] != 0) return false;
    }
    return true;
}

}  // namespace xb
