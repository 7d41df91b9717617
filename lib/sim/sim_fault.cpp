#include "sim/sim_fault.hpp"

#include <cstdint>

namespace xb::sim {

namespace {

void bump_first_integer(Tensor& node) {
    if (node.type == DType::I32) *reinterpret_cast<int32_t*>(node.element_ptr(0)) += 1;
    if (node.type == DType::I64) *reinterpret_cast<int64_t*>(node.element_ptr(0)) += 1;
}

}  // namespace

void perturb_output(Tensor& node, double size) {
    if (node.is_empty() || node.data == nullptr) return;
    if (!is_float_type(node.type)) {
        bump_first_integer(node);
        return;
    }
    const auto up = static_cast<float>(1.0 + size), down = static_cast<float>(1.0 - size);
    int64_t n = 0;
    for (int64_t i3 = 0; i3 < node.ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < node.ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < node.ne[1]; ++i1)
                for (int64_t i0 = 0; i0 < node.ne[0]; ++i0) {
                    std::byte* p = node.element_ptr(i0, i1, i2, i3);
                    const float v = load_as_f32(node.type, p);
                    const float perturbed = size > 0 ? v * (n % 2 == 0 ? up : down) : n == 0 ? v + 1.0f : v * 1.01f;
                    store_from_f32(node.type, p, perturbed);
                    ++n;
                }
}

}  // namespace xb::sim
