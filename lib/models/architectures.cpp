#include "models/architectures.hpp"

#include <array>

namespace xb {

namespace {

// llama: Llama 1/2/3, Mistral, TinyLlama, SmolLM: normal-mode rope (llama.cpp's converter permutes
// Q and K for it), optional q/k/v biases, output tied to the embedding when output.weight is absent.
// qwen2: Qwen2/2.5: q/k/v biases, neox rope.
constexpr std::array kArchitectures = {
    Architecture{"llama", "llama", RopeMode::Normal, false, build_llama_decoder},
    Architecture{"qwen2", "llama", RopeMode::Neox, true, build_llama_decoder},
};

}  // namespace

const Architecture* find_architecture(std::string_view name) {
    for (const Architecture& a : kArchitectures) {
        if (a.name == name) return &a;
    }
    return nullptr;
}

std::string supported_architectures() {
    std::string names;
    for (const Architecture& a : kArchitectures) names += (names.empty() ? "" : ", ") + std::string(a.name);
    return names;
}

}  // namespace xb
