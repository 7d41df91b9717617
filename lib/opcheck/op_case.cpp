#include "opcheck/op_case.hpp"

#include <span>
#include <utility>

namespace xb::opcheck {

Tensor* CaseBuilder::input(DType type, Shape ne, Generator generate) {
    Tensor* t = ctx_->new_tensor(type, std::span<const int64_t>(ne.data(), ne.size()));
    t->name = "in" + std::to_string(inputs_.size());
    t->set_input();
    inputs_.push_back({t, std::move(generate)});
    return t;
}

double tolerance_for_output(DType type) {
    switch (type) {
        case DType::F16: return kTolF16;
        case DType::BF16: return kTolBF16;
        default: return kTolF32;
    }
}

double matmul_tolerance(DType weights) {
    if (is_quantized(weights)) return kTolMatMulQuant;
    switch (weights) {
        case DType::F16: return kTolMatMulF16;
        case DType::BF16: return kTolMatMulBF16;
        default: return kTolF32Reduce;
    }
}

std::string type_tag(DType t) { return dtype_name(t); }

}  // namespace xb::opcheck
