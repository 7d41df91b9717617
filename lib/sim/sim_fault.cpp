#include "sim/sim_fault.hpp"

#include <cstdint>
#include <cstring>

#include "core/tensor_values.hpp"

namespace xb::sim {

namespace {

// +1 on the first element, in the integer's own arithmetic (wrapping, so that even the largest id
// changes, and exactly, which a trip through float is not above 2^24).
template <typename U>
void bump_first(Tensor& node) {
    U bits;
    std::memcpy(&bits, node.element_ptr(0), sizeof bits);
    bits = static_cast<U>(bits + 1u);
    std::memcpy(node.element_ptr(0), &bits, sizeof bits);
}

}  // namespace

void perturb_output(Tensor& node, double size) {
    if (node.is_empty() || node.data == nullptr) return;
    if (node.type == DType::I32) return bump_first<uint32_t>(node);
    if (node.type == DType::I64) return bump_first<uint64_t>(node);
    const auto f = static_cast<float>(size);
    rewrite_values(node, [f](int64_t n, float v) {
        const float turn = n % 2 == 0 ? f : -f;
        return v == 0.0f ? turn : v * (1.0f + turn);
    });
}

}  // namespace xb::sim
