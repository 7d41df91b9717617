// The backends one worker uses: the CPU (the reference of every check) and the backends under test.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "core/status.hpp"

namespace xb::tools::opcheck {

struct WorkerBackends {
    std::unique_ptr<Backend> cpu;
    std::vector<std::unique_ptr<Backend>> targets;  // in the order of the names given
};

// Makes the CPU backend and one backend per name. With several workers and no -t, each worker's
// CPU backend gets an equal share of the cores, so that workers do not fight over them.
Result<WorkerBackends> make_worker_backends(const std::vector<std::string>& names, int jobs, int threads);

}  // namespace xb::tools::opcheck
