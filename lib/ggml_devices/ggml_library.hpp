// ggml backends built as shared libraries, loaded at run time so that a backend developer can point
// the tools at the backend being built:
//
//     XB_GGML_BACKENDS=/path/libggml-vulkan.so[:/path/libggml-other.so...] backend-compare -b CPU,ggml:Vulkan0 ...
//
// Each library is checked before ggml loads it (it exists, the dynamic loader opens it, it exports
// ggml_backend_init as a backend built with GGML_BACKEND_DL does), then registered with
// ggml_backend_load. It must be built from the same ggml as xbackend's (scripts/ggml-setup) or one
// with the same backend interface.
//
// ggml's own log lines are routed here too: dropped (xbackend's statuses report every failure in
// one line), or with XB_GGML_LOG=1 written to stderr as "ggml: ...".
#pragma once

#include "core/status.hpp"

namespace xb::ggml_devices {

// Loads every library of XB_GGML_BACKENDS once per process and returns the first failure each
// later call too: "XB_GGML_BACKENDS: /x/libfoo.so: not a ggml backend library (it has no
// ggml_backend_init)". Ok when the variable is unset or empty.
Status load_backend_libraries();

// Installs the log filter (once).
void route_ggml_logs();

}  // namespace xb::ggml_devices
