// The machine's memory, as the CPU device reports it and as the config layer checks the host
// memory that input values take before making them.
#pragma once

#include <cstddef>

namespace xb {

// Total physical memory of the machine, in bytes.
size_t physical_memory_bytes();
// Memory currently available to new allocations, in bytes.
size_t available_memory_bytes();

}  // namespace xb
