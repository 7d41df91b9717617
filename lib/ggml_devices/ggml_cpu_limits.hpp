// What ggml's CPU backend accepts in ggml_backend_dev_supports_op but then aborts on inside its
// kernels (a GGML_ASSERT or GGML_ABORT("fatal error") for a type or layout the kernel does not
// have). xbackend must never let a user's graph abort the process, so these count as unsupported
// (the node falls back, and the reports say why). Read from ggml-cpu's sources (ops.cpp,
// binary-ops.cpp, unary-ops.cpp, ggml-cpu.c) of the pinned ggml, and checked by running every
// op-check case on ggml:CPU (tests/tools/ggml_devices.sh): none aborts.
#pragma once

#include <string>

struct ggml_tensor;

namespace xb::ggml_devices {

// Why ggml's CPU kernel for `node` would abort ("" when it computes it).
std::string cpu_kernel_gap(const ggml_tensor* node);

}  // namespace xb::ggml_devices
