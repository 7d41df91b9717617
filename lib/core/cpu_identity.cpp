#include "core/cpu_identity.hpp"

#include <array>
#include <cstring>
#include <fstream>
#include <system_error>

#include "core/size_math.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace xb {

namespace {

// "model name" of /proc/cpuinfo (cpuid's brand string as the kernel reports it).
std::string proc_model_name() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) == 0) {
            const size_t colon = line.find(':');
            if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
        }
    }
    return {};
}

std::string read_line(const std::filesystem::path& file) {
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);
    return line;
}

// "48K", "2048K", "32M" -> bytes; 0 for anything else.
size_t parse_cache_size(const std::string& text) {
    size_t value = 0, i = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) value = value * 10 + static_cast<size_t>(text[i] - '0');
    if (i == 0) return 0;
    if (i == text.size()) return value;
    switch (text[i]) {
        case 'K': return value << 10;
        case 'M': return value << 20;
        case 'G': return value << 30;
        default: return 0;
    }
}

void read_cpuid(CpuIdentity& cpu) {
#if defined(__x86_64__) || defined(__i386__)
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) return;
    std::array<char, 13> vendor{};
    std::memcpy(vendor.data(), &ebx, 4);
    std::memcpy(vendor.data() + 4, &edx, 4);
    std::memcpy(vendor.data() + 8, &ecx, 4);
    cpu.vendor = vendor.data();
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return;
    // The display family and model: the extended fields count for families 6 and 15 (Intel's
    // rule; AMD's families from 15 on, which is the same thing for every AMD part since).
    const int base_family = static_cast<int>((eax >> 8) & 0xF), base_model = static_cast<int>((eax >> 4) & 0xF);
    cpu.stepping = static_cast<int>(eax & 0xF);
    cpu.family = base_family == 15 ? base_family + static_cast<int>((eax >> 20) & 0xFF) : base_family;
    cpu.model = base_family == 6 || base_family == 15 ? base_model + (static_cast<int>((eax >> 16) & 0xF) << 4) : base_model;
#else
    (void)cpu;
#endif
}

std::string size_text(size_t bytes) {
    if (bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
    if (bytes % (1u << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
    return bytes_text(static_cast<double>(bytes));
}

}  // namespace

std::string microarchitecture_name(std::string_view vendor, int family, int model) {
    struct Part {
        int family, first_model, last_model;
        const char* name;
    };
    static constexpr Part kIntel[] = {
        {6, 0x3F, 0x3F, "Haswell-EP"},      {6, 0x4F, 0x4F, "Broadwell-EP"},    {6, 0x55, 0x55, "Skylake-SP/Cascade Lake"},
        {6, 0x6A, 0x6C, "Ice Lake-SP"},     {6, 0x7D, 0x7E, "Ice Lake"},        {6, 0x8C, 0x8D, "Tiger Lake"},
        {6, 0x8F, 0x8F, "Sapphire Rapids"}, {6, 0x97, 0x9A, "Alder Lake"},      {6, 0xAA, 0xAC, "Meteor Lake"},
        {6, 0xAD, 0xAE, "Granite Rapids"},  {6, 0xAF, 0xAF, "Sierra Forest"},   {6, 0xB7, 0xB7, "Raptor Lake"},
        {6, 0xBA, 0xBA, "Raptor Lake"},     {6, 0xBD, 0xBD, "Lunar Lake"},      {6, 0xBF, 0xBF, "Raptor Lake"},
        {6, 0xC5, 0xC6, "Arrow Lake"},      {6, 0xCF, 0xCF, "Emerald Rapids"},  {6, 0xDD, 0xDD, "Clearwater Forest"},
    };
    static constexpr Part kAmd[] = {
        {23, 0x00, 0x2F, "Zen/Zen+"}, {23, 0x30, 0xFF, "Zen 2"},  {25, 0x00, 0x0F, "Zen 3"}, {25, 0x10, 0x1F, "Zen 4"},
        {25, 0x20, 0x5F, "Zen 3"},    {25, 0x60, 0x7F, "Zen 4"},  {25, 0xA0, 0xAF, "Zen 4"}, {26, 0x00, 0xFF, "Zen 5"},
    };
    const auto find = [&](const auto& table) -> std::string {
        for (const Part& p : table) {
            if (p.family == family && model >= p.first_model && model <= p.last_model) return p.name;
        }
        return {};
    };
    if (vendor == "GenuineIntel") return find(kIntel);
    if (vendor == "AuthenticAMD") return find(kAmd);
    return {};
}

CpuCaches read_cpu_caches(const std::filesystem::path& cache_dir) {
    CpuCaches caches;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(cache_dir, ec)) {
        if (entry.path().filename().string().rfind("index", 0) != 0) continue;
        const std::string level = read_line(entry.path() / "level"), type = read_line(entry.path() / "type");
        const size_t bytes = parse_cache_size(read_line(entry.path() / "size"));
        if (level == "1" && type == "Data") caches.l1d_bytes = bytes;
        if (level == "2" && type != "Instruction") caches.l2_bytes = bytes;
        if (level == "3" && type != "Instruction") caches.l3_bytes = bytes;
    }
    return caches;
}

const CpuIdentity& host_cpu() {
    static const CpuIdentity cpu = [] {
        CpuIdentity c;
        read_cpuid(c);
        c.model_name = proc_model_name();
        c.microarchitecture = microarchitecture_name(c.vendor, c.family, c.model);
        c.caches = read_cpu_caches("/sys/devices/system/cpu/cpu0/cache");
        return c;
    }();
    return cpu;
}

std::string describe_cpu(const CpuIdentity& cpu) {
    std::string text = cpu.model_name.empty() ? std::string("CPU") : cpu.model_name;
    std::string details;
    const auto add = [&details](const std::string& part) { details += (details.empty() ? "" : ", ") + part; };
    if (!cpu.microarchitecture.empty()) add(cpu.microarchitecture);
    if (cpu.family > 0) add("family " + std::to_string(cpu.family) + " model " + std::to_string(cpu.model));
    std::string caches;
    const auto add_cache = [&caches](const char* name, size_t bytes) {
        if (bytes > 0) caches += (caches.empty() ? "" : ", ") + std::string(name) + " " + size_text(bytes);
    };
    add_cache("L1d", cpu.caches.l1d_bytes);
    add_cache("L2", cpu.caches.l2_bytes);
    add_cache("L3", cpu.caches.l3_bytes);
    if (!caches.empty()) details += (details.empty() ? "" : "; ") + caches;
    return details.empty() ? text : text + " (" + details + ")";
}

}  // namespace xb
