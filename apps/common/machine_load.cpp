#include "machine_load.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "backend/host_threads.hpp"

namespace xb::tools {

namespace {

// Runnable tasks on the whole machine now, this thread included; -1 when unknown.
int procs_running() {
    std::ifstream in("/proc/stat");
    std::string key;
    while (in >> key) {
        if (key == "procs_running") {
            int n = -1;
            in >> n;
            return n;
        }
        in.ignore(1 << 20, '\n');
    }
    return -1;
}

// This process's threads that are runnable now (this one included): idle-spinning OpenBLAS or
// OpenMP workers of an earlier compute are ours, not competitors.
int own_threads_running() {
    int n = 0;
    std::error_code ec;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
        std::ifstream in(task.path() / "stat");
        std::string line;
        if (!std::getline(in, line)) continue;
        const size_t close = line.rfind(')');  // the name in parentheses may hold spaces
        if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'R') ++n;
    }
    return std::max(n, 1);
}

int cpu_count() {
    const size_t allowed = cpus_allowed().size();
    return allowed > 0 ? static_cast<int>(allowed) : static_cast<int>(std::thread::hardware_concurrency());
}

// "1 other task is running on this machine's 2 CPUs", the start of every warning.
std::string busy_text(const MachineLoad& load) {
    const int n = load.others_running;
    return std::to_string(n) + (n == 1 ? " other task is" : " other tasks are") + " running on this machine's " +
           std::to_string(load.cpus) + " CPUs";
}

}  // namespace

std::string threads_text(int n) { return std::to_string(n) + (n == 1 ? " thread" : " threads"); }

MachineLoad sample_machine_load() {
    MachineLoad load;
    load.cpus = cpu_count();
    // The least of several samples: a task that runs only for a moment (or this process's own
    // threads winding down) should not count, a steady competitor shows in every sample.
    int least = -1;
    for (int i = 0; i < 5; ++i) {
        if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        const int n = procs_running();
        if (n < 0) return load;
        const int others = n - own_threads_running();
        least = least < 0 ? others : std::min(least, others);
    }
    load.others_running = std::max(0, least);
    return load;
}

std::string contention_warning(const MachineLoad& load, int threads) {
    if (load.cpus <= 0 || load.others_running + threads <= load.cpus) return {};
    const int fit = std::max(1, load.cpus - load.others_running);
    return busy_text(load) + ": timings with " + threads_text(threads) + " will contend with " +
           (load.others_running == 1 ? "it" : "them") + (fit < threads ? " (try -t " + std::to_string(fit) + ")" : "");
}

ThreadChoice choose_threads(int requested) {
    ThreadChoice c;
    c.load = sample_machine_load();
    if (requested > 0 || host_threads_from_environment()) {
        c.threads = requested > 0 ? requested : default_host_threads();
        c.warning = contention_warning(c.load, c.threads);
        return c;
    }
    const int cores = default_host_threads();
    const int idle = c.load.cpus - c.load.others_running;
    c.threads = std::clamp(idle, 1, cores);
    if (c.threads < cores) {
        c.warning = busy_text(c.load) + ": using " + threads_text(c.threads) + " instead of " + std::to_string(cores) +
                    " (-t " + std::to_string(cores) + " to use them anyway)";
    } else {
        c.warning = contention_warning(c.load, c.threads);  // even one thread shares a CPU
    }
    return c;
}

}  // namespace xb::tools
