// The thread count host backends use by default. The CPU backend and the BLAS backend both compute
// in the same OpenMP team (see blas/openblas.hpp), so they share one default.
#pragma once

#include <functional>
#include <string_view>
#include <string>
#include <vector>

#include "core/status.hpp"

namespace xb {

// OMP_NUM_THREADS when it is set (the usual way to cap an OpenMP program, and how the TSan CI step
// keeps libgomp to one thread); else the physical cores among the CPUs this process may run on,
// as llama.cpp does: a second hyperthread on a core adds little to these kernels and costs every
// barrier a wait for the slowest thread.
int default_host_threads();

// OMP_NUM_THREADS is set: the user chose the thread count.
bool host_threads_from_environment();

// The logical CPUs this process may run on (its affinity mask); empty when it cannot be read.
std::vector<int> cpus_allowed();

// The number of distinct cores among `cpus`, where siblings(cpu) is the kernel's list of the
// logical CPUs sharing cpu's core ("0,64" or "0-1"; "" when unknown: that CPU counts as a core of
// its own). Separate from the sysfs reading so that tests can give any topology.
int count_physical_cores(const std::vector<int>& cpus, const std::function<std::string(int)>& siblings);

// The settings of a device whose only one is its thread count: "threads=N" (or "n_threads=N"),
// N >= 1; 0 when `params` does not set it. InvalidArgument naming `device` for another key or a
// value that is not a positive integer.
Result<int> parse_threads_setting(std::string_view device, std::string_view params);

}  // namespace xb
