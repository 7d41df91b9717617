// The GPU-required mode itself: under XB_REQUIRE_GPU=1 the device conformance suites must include a
// CUDA device, since they are instantiated over the registered devices and would otherwise just
// leave the GPU out.
#include <cstdlib>
#include <string_view>

#include "backend/registry.hpp"
#include "builtin/builtin_backends.hpp"
#include "gpu_required.hpp"

namespace xbt {

bool gpu_required() {
    const char* value = std::getenv("XB_REQUIRE_GPU");
    return value != nullptr && std::string_view(value) != "" && std::string_view(value) != "0";
}

namespace {

TEST(GpuRequired, CudaDeviceIsRegistered) {
    if (xb::global_registry().dev_by_name("CUDA0") != nullptr) return;
#if defined(XB_HAVE_CUDA)
    XB_SKIP_WITHOUT_GPU("no CUDA0 device registered (no GPU or driver)");
#else
    XB_SKIP_WITHOUT_GPU("built without CUDA");
#endif
}

}  // namespace
}  // namespace xbt
