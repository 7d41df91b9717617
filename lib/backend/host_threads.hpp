// The thread count host backends use by default. The CPU backend and the BLAS backend both compute
// in the same OpenMP team (see blas/openblas.hpp), so they share one default.
#pragma once

namespace xb {

// OMP_NUM_THREADS when set to a positive number, else the cores of the machine.
int default_host_threads();

}  // namespace xb
