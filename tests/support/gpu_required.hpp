// XB_REQUIRE_GPU=1 (scripts/gpu-check sets it on a GPU machine): a test that would be skipped for
// lack of a GPU, or for a build without CUDA, fails instead, so that a run which silently tested
// nothing on the device cannot pass. Without the variable such tests are skipped with the reason,
// never passed.
#pragma once

#include <gtest/gtest.h>

namespace xbt {

// True when XB_REQUIRE_GPU is set to anything but "" or "0".
bool gpu_required();

}  // namespace xbt

// Skips the current test for `reason` (a streamable expression), or fails it under XB_REQUIRE_GPU=1.
// Use it only where the reason is a missing GPU or a build without CUDA.
#define XB_SKIP_WITHOUT_GPU(reason)                                                  \
    do {                                                                             \
        if (::xbt::gpu_required()) {                                                 \
            FAIL() << "XB_REQUIRE_GPU=1 but this test cannot run: " << reason;       \
        } else {                                                                     \
            GTEST_SKIP() << reason;                                                  \
        }                                                                            \
    } while (0)
