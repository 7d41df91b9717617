// What the host CPU is: its vendor, model, microarchitecture and caches. Machines of one kind differ
// (a 2-vCPU cloud VM is an Intel Sapphire Rapids one day, an AMD Zen 4 the next), so every benchmark
// names the processor it ran on, and kernel choices that depend on the machine read it from here.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace xb {

struct CpuCaches {
    size_t l1d_bytes = 0;  // per core
    size_t l2_bytes = 0;   // per core
    size_t l3_bytes = 0;   // shared by the cores of one L3 (a package, or an AMD core complex)
};

struct CpuIdentity {
    std::string vendor;             // cpuid's vendor string: "GenuineIntel", "AuthenticAMD"; "" off x86
    std::string model_name;         // "model name" of /proc/cpuinfo; "" where it cannot be read
    int family = 0;                 // cpuid's display family and model (extended fields folded in)
    int model = 0;
    int stepping = 0;
    std::string microarchitecture;  // "Sapphire Rapids", "Zen 4"; "" for one the table does not know
    CpuCaches caches;
};

// The host's, read once (cpuid and /sys/devices/system/cpu/cpu0/cache).
const CpuIdentity& host_cpu();

// The microarchitecture of a vendor's display family and model, "" where unknown. Server and
// desktop parts of the last generations; VMs report the host's family and model.
std::string microarchitecture_name(std::string_view vendor, int family, int model);

// The cache sizes described by a Linux cache folder (/sys/devices/system/cpu/cpuN/cache: index*/
// level, type and size such as "48K"); zeros for what it lacks.
CpuCaches read_cpu_caches(const std::filesystem::path& cache_dir);

// One line for reports: "Intel(R) Xeon(R) Processor (Emerald Rapids, family 6 model 207;
// L1d 48 KiB, L2 2 MiB, L3 260 MiB)". The model name is "CPU" where unknown.
std::string describe_cpu(const CpuIdentity& cpu);

}  // namespace xb
