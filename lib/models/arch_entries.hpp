// Each architecture's entry, defined in its own file (models/arch_<name>.cpp; qwen3moe beside
// qwen3 and qwen3next beside qwen35, whose layers they share) and listed in the table of models/architectures.cpp.
#pragma once

#include "models/architectures.hpp"

namespace xb::arch {

extern const Architecture kLlama;
extern const Architecture kQwen2;
extern const Architecture kQwen3;
extern const Architecture kQwen3Moe;
extern const Architecture kGemma2;
extern const Architecture kGemma3;
extern const Architecture kPhi3;
extern const Architecture kGptOss;
extern const Architecture kDeepseek2;
extern const Architecture kLfm2;
extern const Architecture kLfm2Moe;
extern const Architecture kGraniteHybrid;
extern const Architecture kQwen35;
extern const Architecture kQwen35Moe;
extern const Architecture kQwen3Next;
extern const Architecture kNemotronH;
extern const Architecture kNemotronHMoe;

}  // namespace xb::arch
