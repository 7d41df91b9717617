// The one place that knows the concrete backends compiled into the library (as ggml's
// ggml-backend-reg.cpp): everything else finds them through the Registry.
#include "backend/registry.hpp"
#include "cpu/cpu_backend.hpp"
#include "sim/sim_backend.hpp"
#if defined(XB_HAVE_BLAS)
#include "blas/blas_backend.hpp"
#endif
#if defined(XB_HAVE_CUDA)
#include "cuda/cuda.hpp"
#endif

namespace xb {

void register_builtin_backends(Registry& registry) {
    // The CPU comes first so that it is device 0 everywhere.
    cpu::register_cpu_backend(registry);
#if defined(XB_HAVE_BLAS)
    blas::register_blas_backend(registry);
#endif
#if defined(XB_HAVE_CUDA)
    // One device per GPU present; none (and no failure) without a GPU or driver.
    cuda::register_cuda_backend(registry);
#endif
    sim::register_sim_backend(registry);
}

}  // namespace xb
