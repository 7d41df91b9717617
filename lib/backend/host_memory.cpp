#include "backend/host_memory.hpp"

#include <unistd.h>

namespace xb {

size_t physical_memory_bytes() {
    return static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGE_SIZE));
}

size_t available_memory_bytes() {
    return static_cast<size_t>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGE_SIZE));
}

}  // namespace xb
