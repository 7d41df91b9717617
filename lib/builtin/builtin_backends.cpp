#include "builtin/builtin_backends.hpp"

#include "builtin/environment.hpp"
#include "cpu/cpu_backend.hpp"
#include "f64/f64_device.hpp"
#include "sim/sim_backend.hpp"
#if defined(XB_HAVE_BLAS)
#include "blas/blas_backend.hpp"
#endif
#if defined(XB_HAVE_CUDA)
#include "cuda/cuda.hpp"
#endif
#if defined(XB_HAVE_GGML)
#include "ggml_devices/ggml_device.hpp"
#endif

namespace xb {

int sim_device_count() {
    const Result<std::optional<int>> n = environment_integer("XB_SIM_DEVICES", 0, kMaxSimDevices, "");
    return n.is_ok() ? n.value().value_or(kDefaultSimDevices) : kDefaultSimDevices;
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
#if defined(XB_HAVE_GGML)
    // ggml's devices (ggml:CPU, ...): used where named.
    ggml_devices::register_ggml_backends(registry);
#endif
    // Last: the exact reference judges the devices above and is used only where named.
    f64::register_f64_backend(registry);
}

Registry& global_registry() {
    // Function-local statics: initialised once, thread-safely, on first use.
    static Registry registry;
    static const bool registered = (register_builtin_backends(registry), true);
    static_cast<void>(registered);
    return registry;
}

}  // namespace xb
