// The backends compiled into the library, and the process's registry of them: the one place that
// knows the concrete backends (as ggml's ggml-backend-reg.cpp); everything else finds them through a
// Registry.
#pragma once

#include "backend/registry.hpp"

namespace xb {

// Adds the CPU (always device 0), BLAS (when built), one CUDA device per GPU present (none, and no
// failure, without a GPU or driver) and sim_device_count() simulated devices to `registry`.
void register_builtin_backends(Registry& registry);

inline constexpr int kDefaultSimDevices = 2;
inline constexpr int kMaxSimDevices = 15;  // with the CPU, a scheduler's limit of 16 backends

// XB_SIM_DEVICES=N (0..15): how many simulated devices (SIM0..SIM<N-1>) to register, so that
// several-device paths run anywhere; the default is 2. An unusable value keeps the default here
// (the registry is made before any tool could report it); the tools refuse it first
// (check_environment, builtin/environment.hpp).
int sim_device_count();

// The process-wide registry of the built-in backends, built on first use: the one piece of global
// state in xbackend. The tools use it; library code takes a Registry& instead, so that tests can
// give each case a registry of its own.
Registry& global_registry();

}  // namespace xb
