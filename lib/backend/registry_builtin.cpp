// The one place that knows the concrete backends compiled into the library (as ggml's
// ggml-backend-reg.cpp): everything else finds them through the Registry.
#include "backend/registry.hpp"
#include "cpu/cpu_backend.hpp"

namespace xb {

void register_builtin_backends(Registry& registry) {
    // The CPU comes first so that it is device 0 everywhere.
    cpu::register_cpu_backend(registry);
}

}  // namespace xb
