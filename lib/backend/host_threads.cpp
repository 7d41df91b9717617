#include "backend/host_threads.hpp"

#include <cstdlib>
#include <thread>

namespace xb {

int default_host_threads() {
    // OMP_NUM_THREADS is the usual way to cap OpenMP programs (and how the ThreadSanitizer CI step
    // keeps libgomp, which TSan cannot see into, single-threaded).
    if (const char* env = std::getenv("OMP_NUM_THREADS")) {
        const int n = std::atoi(env);
        if (n > 0) return n;
    }
    const unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : static_cast<int>(n);
}

}  // namespace xb
