#include "backend/host_threads.hpp"

#include <omp.h>

#include <algorithm>

namespace xb {

int default_host_threads() {
    // OpenMP's own default team size: OMP_NUM_THREADS when set (the usual way to cap OpenMP programs,
    // and how the ThreadSanitizer CI step keeps libgomp, which TSan cannot see into, to one
    // thread), else the cores this process may run on. The runtime reads the variable, not us.
    return std::max(1, omp_get_max_threads());
}

}  // namespace xb
