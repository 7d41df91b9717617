#include "sim/sim_fault.hpp"

#include "core/tensor_values.hpp"

namespace xb::sim {

void perturb_output(Tensor& node, double size) {
    if (node.is_empty() || node.data == nullptr) return;
    if (!is_float_type(node.type) && !is_quantized(node.type)) {
        rewrite_values(node, [](int64_t n, float v) { return n == 0 ? v + 1.0f : v; });
        return;
    }
    const auto f = static_cast<float>(size);
    rewrite_values(node, [f](int64_t n, float v) {
        const float turn = n % 2 == 0 ? f : -f;
        return v == 0.0f ? turn : v * (1.0f + turn);
    });
}

}  // namespace xb::sim
