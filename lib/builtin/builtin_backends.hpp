// The backends compiled into the library, and the process's registry of them: the one place that
// knows the concrete backends (as ggml's ggml-backend-reg.cpp); everything else finds them through a
// Registry.
#pragma once

#include "backend/registry.hpp"

namespace xb {

// Adds the CPU (always device 0), BLAS (when built), one CUDA device per GPU present (none, and no
// failure, without a GPU or driver) and the simulated devices to `registry`.
void register_builtin_backends(Registry& registry);

// The process-wide registry of the built-in backends, built on first use: the one piece of global
// state in xbackend. The tools use it; library code takes a Registry& instead, so that tests can
// give each case a registry of its own.
Registry& global_registry();

}  // namespace xb
