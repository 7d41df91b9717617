#include "run_metadata.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iterator>
#include <thread>

#include "backend/registry.hpp"
#include "build_info.hpp"
#include "builtin/builtin_backends.hpp"
#include "core/cpu_identity.hpp"
#include "core/isa.hpp"

namespace xb::tools {

namespace {

std::string utc_now() {
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

// The processor as fields, for scripts that keep one result file per machine measured.
nlohmann::ordered_json cpu_identity_json(const CpuIdentity& cpu) {
    return {{"vendor", cpu.vendor},
            {"model_name", cpu.model_name},
            {"family", cpu.family},
            {"model", cpu.model},
            {"stepping", cpu.stepping},
            {"microarchitecture", cpu.microarchitecture},
            {"l1d_bytes", cpu.caches.l1d_bytes},
            {"l2_bytes", cpu.caches.l2_bytes},
            {"l3_bytes", cpu.caches.l3_bytes}};
}

// The CPU device's description: the processor, its kernel set and the kernel choices made from the
// machine ("..., avx512 kernels, one-token products by row pairs").
std::string cpu_device_description() {
    const Device* cpu = global_registry().dev_by_name("CPU");
    return cpu != nullptr ? cpu->description() : std::string();
}

}  // namespace

std::string file_hash(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return {};
    uint64_t h = 0xcbf29ce484222325ull;
    for (std::istreambuf_iterator<char> it(in), end; it != end; ++it) {
        h ^= static_cast<unsigned char>(*it);
        h *= 0x100000001b3ull;
    }
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

nlohmann::ordered_json run_metadata(const CommonOptions& o) {
    nlohmann::ordered_json gpus = nlohmann::ordered_json::array();
    Registry& reg = global_registry();
    for (size_t i = 0; i < reg.dev_count(); ++i) {
        const Device& d = reg.dev(i);
        if (d.type() == DeviceType::GPU && !d.is_simulated() && !d.is_foreign()) gpus.push_back({{"name", d.name()}, {"description", d.description()}});
    }
    nlohmann::ordered_json config = nullptr;
    if (!o.config.empty()) config = {{"path", o.config}, {"hash", file_hash(o.config)}};
    return {{"tool", o.tool},
            {"commit", kBuildCommit},
            {"dirty", kBuildDirty},
            {"build_type", XB_BUILD_TYPE},
            {"compiler", XB_COMPILER},
            {"cpu", describe_cpu(host_cpu())},
            {"cpu_identity", cpu_identity_json(host_cpu())},
            {"cpu_kernels", isa_name(active_isa())},
            {"cpu_device", cpu_device_description()},
            {"n_cpus", std::thread::hardware_concurrency()},
            {"threads", o.threads},  // 0: each backend's default
            {"backends", o.backends},
            {"gpus", std::move(gpus)},
            {"seed", o.seed ? nlohmann::ordered_json(*o.seed) : nlohmann::ordered_json(nullptr)},
            {"config", std::move(config)},
            {"date", utc_now()}};
}

}  // namespace xb::tools
