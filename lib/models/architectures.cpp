#include "models/architectures.hpp"

#include <array>

#include "models/arch_entries.hpp"

namespace xb {

namespace {

// Every supported architecture, in the order messages list them.
constexpr std::array kArchitectures = {
    &arch::kLlama, &arch::kQwen2,  &arch::kQwen3,  &arch::kQwen3Moe,  &arch::kGemma2,
    &arch::kGemma3, &arch::kPhi3, &arch::kGptOss, &arch::kDeepseek2, &arch::kLfm2, &arch::kLfm2Moe, &arch::kGraniteHybrid, &arch::kQwen35, &arch::kQwen35Moe, &arch::kQwen3Next, &arch::kNemotronH, &arch::kNemotronHMoe,
};

}  // namespace

const Architecture* find_architecture(std::string_view name) {
    for (const Architecture* a : kArchitectures) {
        if (a->name == name) return a;
    }
    return nullptr;
}

std::string supported_architectures() {
    std::string names;
    for (const Architecture* a : kArchitectures) names += (names.empty() ? "" : ", ") + std::string(a->name);
    return names;
}

const Architecture& llama_architecture() { return arch::kLlama; }

LayerWeights make_layer_weights(const Architecture& arch, decoder::WeightMaker& make, int il) {
    decoder::LayerWeightMaker layer_make(make, il);
    LayerWeights w{};
    arch.layer_weights(layer_make, w);
    return w;
}

}  // namespace xb
