// The CPU backend: computes every op with the kernels of lib/cpu on OpenMP threads.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/failure_countdown.hpp"
#include "backend/registry.hpp"
#include "core/aligned_bytes.hpp"
#include "cpu_kernels/graph_executor.hpp"
#include "cpu/cpu_buffer_type.hpp"
#include "cpu/cpu_repack_buffer_type.hpp"

namespace xb::cpu {

struct CpuOptions {
    int n_threads = 0;  // 0: default_host_threads()
    // Device-wide test hook: the N-th buffer allocation from now on fails once (0: off).
    std::optional<int> fail_alloc;
    // Device-wide: buffers of a huge page or more in transparent huge pages (backend/huge_pages.hpp).
    std::optional<bool> huge_pages;
    // Device-wide: weights read only by mul_mat kept in the kernels' repacked layout
    // (cpu_repack_buffer_type.hpp) by placements made afterwards.
    std::optional<bool> repack;
};
// Parses "threads=N" (or "n_threads=N"), "fail_alloc=N|none", "huge_pages=on|off" and "repack=on|off".
Result<CpuOptions> parse_cpu_options(std::string_view params);

class CpuDevice final : public Device {
public:
    explicit CpuDevice(BackendReg& reg);

    const char* name() const override { return "CPU"; }
    std::string description() const override;
    MemoryInfo memory() const override;
    DeviceType type() const override { return DeviceType::CPU; }
    DeviceCaps caps() const override;

    // "threads=N": the default thread count of backends made afterwards; "fail_alloc=N": the N-th
    // buffer allocation from now on fails once with OutOfMemory (a test hook, as on the sim);
    // "huge_pages=on|off": whether buffers allocated afterwards ask for huge pages (default on);
    // "repack=on|off": whether placements made afterwards keep q4_K weights 8 rows interleaved.
    Status configure(std::string_view params) override;
    std::string settings() const override;
    Result<std::unique_ptr<Backend>> init_backend(std::string_view params) override;
    BufferType& buffer_type() override { return buffer_type_; }
    Result<std::unique_ptr<Buffer>> buffer_from_host_ptr(void* ptr, size_t size, size_t max_tensor_size) override;
    // Counts a buffer allocation; true when it is the one fail_alloc asked to fail.
    bool allocation_fails() { return alloc_failure_.next_fails(); }
    bool huge_pages() const { return huge_pages_; }

    bool supports_op(const Tensor& op) const override;
    bool supports_buft(const BufferType& buft) const override { return buft.is_host() || &buft == &repack_type_; }
    // Only where this CPU's kernels read the groups faster than rows (the AVX-512 VNNI table; the
    // others would run the scalar reference).
    BufferType* repacked_weight_type() override;

private:
    std::string description_;
    CpuOptions defaults_;
    FailureCountdown alloc_failure_;
    bool huge_pages_ = true;
    bool repack_ = true;
    CpuBufferType buffer_type_;
    CpuBufferType from_ptr_type_;
    CpuRepackBufferType repack_type_;
};

class CpuBackend final : public Backend {
public:
    CpuBackend(Device& device, CpuOptions options);

    const char* name() const override { return "CPU"; }
    Status graph_compute_async(const Graph& graph) override;
    Result<std::unique_ptr<GraphPlan>> graph_plan_create(const Graph& graph) override;
    Status graph_plan_compute(GraphPlan& plan) override;

    bool set_n_threads(int n_threads) override;
    int n_threads() const { return executor_.n_threads(); }
    bool set_abort_callback(AbortCallback callback) override;

private:
    cpu_kernels::GraphExecutor executor_;
    cpu_kernels::ExecutorHooks hooks_;
};

// Registers the "CPU" backend family and its device.
void register_cpu_backend(Registry& registry);

}  // namespace xb::cpu
