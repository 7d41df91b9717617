// The environment variables xbackend reads, checked in one place. The registry is made on first use,
// before any tool could report a bad value, so the library falls back to each default; the tools
// call check_environment() first and stop with one line naming the variable (exit 2) instead.
//
//   XB_SIM_DEVICES=N   simulated devices to register, 0 to 15 (default 2)
//   XB_CPU_ISA=SET     the CPU kernels' instruction set: scalar, avx2 or avx512 (a set the CPU lacks
//                      falls back to the best one below it)
//   XB_SCHED_DEBUG=L   the tools print the scheduler's splits: 0 (default), 1, or 2 with every node
//   XB_GGML_BACKENDS=PATH[:PATH...]  ggml backend libraries to load as devices ggml:<name>
//                      (ggml_devices/ggml_library.hpp); a file that is not one is an error
#pragma once

#include <optional>
#include <string_view>

#include "core/status.hpp"

namespace xb {

// The first variable above set to a value it does not take, as InvalidArgument
// "XB_SIM_DEVICES=abc: not an integer (0 to 15; unset: 2)"; ok when each is unset or valid.
Status check_environment();

// An integer variable's value in [min, max]: nullopt when unset, an error naming it when its value
// is not an integer in that range (`fallback_text` says what unset means).
Result<std::optional<int>> environment_integer(const char* name, int min, int max, std::string_view fallback_text);

}  // namespace xb
