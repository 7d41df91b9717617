#include "builtin/builtin_backends.hpp"

#include <cstdlib>

#include "cpu/cpu_backend.hpp"
#include "sim/sim_backend.hpp"
#if defined(XB_HAVE_BLAS)
#include "blas/blas_backend.hpp"
#endif
#if defined(XB_HAVE_CUDA)
#include "cuda/cuda.hpp"
#endif

namespace xb {

int sim_device_count() {
    const char* text = std::getenv("XB_SIM_DEVICES");
    if (text == nullptr) return kDefaultSimDevices;
    char* end = nullptr;
    const long n = std::strtol(text, &end, 10);
    const bool usable = end != text && *end == '\0' && n >= 0 && n <= kMaxSimDevices;
    return usable ? static_cast<int>(n) : kDefaultSimDevices;
}

void register_builtin_backends(Registry& registry) {
    cpu::register_cpu_backend(registry);
#if defined(XB_HAVE_BLAS)
    blas::register_blas_backend(registry);
#endif
#if defined(XB_HAVE_CUDA)
    cuda::register_cuda_backend(registry);
#endif
    sim::register_sim_backend(registry, sim_device_count());
}

Registry& global_registry() {
    // Function-local statics: initialised once, thread-safely, on first use.
    static Registry registry;
    static const bool registered = (register_builtin_backends(registry), true);
    static_cast<void>(registered);
    return registry;
}

}  // namespace xb
