// Placeholder until the sim backend lands.
#pragma once
#include "backend/registry.hpp"
namespace xb::sim {
void register_sim_backend(Registry& registry);
}  // namespace xb::sim
