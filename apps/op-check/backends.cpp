#include "backends.hpp"

#include <algorithm>
#include <thread>

#include "backend/host_threads.hpp"
#include "backend/registry.hpp"
#include "builtin/builtin_backends.hpp"

namespace xb::tools::opcheck {

namespace {

Result<std::unique_ptr<Backend>> make(const std::string& name) {
    auto backend = global_registry().init_by_name(name);
    if (!backend.is_ok()) return Status(backend.status().code(), name + ": " + backend.status().message());
    return backend;
}

}  // namespace

Result<WorkerBackends> make_worker_backends(const std::vector<std::string>& names, int jobs, int threads) {
    WorkerBackends b;
    XB_ASSIGN_OR_RETURN(b.cpu, make("CPU"));
    for (const std::string& name : names) {
        XB_ASSIGN_OR_RETURN(auto backend, make(name));
        b.targets.push_back(std::move(backend));
    }
    // Backends without a thread setting answer false; that is fine.
    if (jobs > 1 && threads == 0) {
        const int share = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / jobs);
        (void)b.cpu->set_n_threads(share);
        for (auto& t : b.targets) (void)t->set_n_threads(share);
    } else {
        // One job (perf mode): every backend that computes with host threads (the simulated devices
        // compute with the CPU kernels, on one thread unless told) gets the CPU's count, so that
        // their timings compare with the CPU's.
        const int n = threads > 0 ? threads : default_host_threads();
        for (auto& t : b.targets) (void)t->set_n_threads(n);
    }
    return b;
}

}  // namespace xb::tools::opcheck
