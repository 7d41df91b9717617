// Placeholder until the blas backend lands.
#pragma once
#include "backend/registry.hpp"
namespace xb::blas {
void register_blas_backend(Registry& registry);
}  // namespace xb::blas
