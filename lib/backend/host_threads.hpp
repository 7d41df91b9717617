// The thread count host backends use by default. The CPU backend and the BLAS backend both compute
// in the same OpenMP team (see blas/openblas.hpp), so they share one default.
#pragma once

namespace xb {

// OpenMP's default team size: OMP_NUM_THREADS when set, else the cores this process may use.
int default_host_threads();

}  // namespace xb
