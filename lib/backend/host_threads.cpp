#include "backend/host_threads.hpp"

#include "backend/registry.hpp"

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <set>

namespace xb {

namespace {

std::string sysfs_siblings(int cpu) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    for (const char* file : {"core_cpus_list", "thread_siblings_list"}) {  // the second on kernels before 5.4
        std::ifstream in(dir + file);
        std::string line;
        if (in && std::getline(in, line) && !line.empty()) return line;
    }
    return {};
}

int physical_cores_available() {
    static const int n = count_physical_cores(cpus_allowed(), sysfs_siblings);  // the topology does not change
    return n;
}

}  // namespace

std::vector<int> cpus_allowed() {
    std::vector<int> cpus;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
    return cpus;
}

bool host_threads_from_environment() { return std::getenv("OMP_NUM_THREADS") != nullptr; }

int count_physical_cores(const std::vector<int>& cpus, const std::function<std::string(int)>& siblings) {
    std::set<std::string> cores;
    for (const int cpu : cpus) {
        const std::string list = siblings(cpu);
        cores.insert(list.empty() ? "cpu" + std::to_string(cpu) : list);  // siblings print the same list
    }
    return static_cast<int>(cores.size());
}

int default_host_threads() {
    if (host_threads_from_environment()) return std::max(1, omp_get_max_threads());
    const int cores = physical_cores_available();
    return cores > 0 ? cores : std::max(1, omp_get_max_threads());
}

Result<int> parse_threads_setting(std::string_view device, std::string_view params) {
    XB_ASSIGN_OR_RETURN(auto items, parse_device_params(params));
    int threads = 0;
    for (const DeviceParam& p : items) {
        if (p.key != "threads" && p.key != "n_threads") {
            return Status(StatusCode::InvalidArgument, std::string(device) + ": unknown parameter '" + p.key + "' (known: threads)");
        }
        int v = 0;
        const auto [end, ec] = std::from_chars(p.value.data(), p.value.data() + p.value.size(), v);
        if (ec != std::errc() || end != p.value.data() + p.value.size() || v < 1) {
            return Status(StatusCode::InvalidArgument,
                          std::string(device) + ": threads must be a positive integer, got '" + p.value + "'");
        }
        threads = v;
    }
    return threads;
}

}  // namespace xb
