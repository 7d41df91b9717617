#include <cstdlib>
#include <string>

#include "backend/host_memory.hpp"
#include "backend/huge_pages.hpp"
#include "backend/host_threads.hpp"
#include "cpu/cpu_backend.hpp"
#include "core/cpu_identity.hpp"
#include "core/isa.hpp"
#include "core/q4k_x8.hpp"
#include "cpu_kernels/quant_dot.hpp"
#include "cpu_kernels/gemv_rows.hpp"
#include "cpu_kernels/matmul_tiles.hpp"
#include "cpu_kernels/kernels.hpp"
#include "core/message_text.hpp"

namespace xb::cpu {

namespace {
// "avx2 kernels", "scalar kernels (XB_CPU_ISA; the CPU runs avx2)" when forced lower, and a note
// when XB_CPU_ISA names no kernel set (a typo must not look like a forced set).
std::string kernel_set_description() {
    const Isa active = active_isa();
    std::string text = std::string(isa_name(active)) + " kernels";
    if (active != best_isa()) text += std::string(" (XB_CPU_ISA; the CPU runs ") + isa_name(best_isa()) + ")";
    const char* forced = std::getenv("XB_CPU_ISA");
    if (forced != nullptr && !isa_from_name(forced)) {
        text += std::string(" (XB_CPU_ISA=") + forced + " is not a kernel set: scalar, avx2 or avx512)";
    }
    return text;
}

// "AMD EPYC 9R14 (Zen 4, family 25 model 17; L1d 32 KiB, L2 1 MiB, L3 32 MiB), avx512 kernels,
// one-token products by single rows, bf16 products by AVX512-BF16 (activations rounded to bf16)".
std::string cpu_description() {
    return describe_cpu(host_cpu()) + ", " + kernel_set_description() + ", " + cpu_kernels::gemv_walk_description() +
           ", " + cpu_kernels::bf16_products_description();
}
}  // namespace

Result<CpuOptions> parse_cpu_options(std::string_view params) {
    XB_ASSIGN_OR_RETURN(auto items, parse_device_params(params));
    CpuOptions options;
    for (const DeviceParam& p : items) {
        if (p.key == "threads" || p.key == "n_threads") {
            try {
                options.n_threads = std::stoi(p.value);
            } catch (const std::exception&) {
                options.n_threads = -1;
            }
            if (options.n_threads < 1) {
                return Status(StatusCode::InvalidArgument, "CPU: threads must be a positive integer, got " + quoted_name(p.value));
            }
        } else if (p.key == "fail_alloc") {
            options.fail_alloc = parse_failure_index(p.value);
            if (!options.fail_alloc) {
                return Status(StatusCode::InvalidArgument, "CPU: fail_alloc must be the index (from 1) of the allocation to fail, or none; got " + quoted_name(p.value));
            }
        } else if (p.key == "huge_pages") {
            if (p.value != "on" && p.value != "off") {
                return Status(StatusCode::InvalidArgument, "CPU: huge_pages must be on or off, got " + quoted_name(p.value));
            }
            options.huge_pages = p.value == "on";
        } else if (p.key == "repack") {
            if (p.value != "on" && p.value != "off") {
                return Status(StatusCode::InvalidArgument, "CPU: repack must be on or off, got " + quoted_name(p.value));
            }
            options.repack = p.value == "on";
        } else {
            return Status(StatusCode::InvalidArgument,
                          "CPU: unknown parameter " + quoted_name(p.key) + " (known: threads, fail_alloc, huge_pages, repack)");
        }
    }
    return options;
}

CpuDevice::CpuDevice(BackendReg& reg)
    : Device(reg), description_(cpu_description()), buffer_type_(*this, CpuBufferType::Memory::Allocated),
      from_ptr_type_(*this, CpuBufferType::Memory::CallerOwned),
      repack_type_(*this) {}

namespace {
// Only the AVX-512 VNNI table has a kernel for the grouped rows; elsewhere the x8 dot is the scalar
// reference, slower than the rows' own dots.
bool groups_have_a_kernel() { return cpu_kernels::quant_dot().dot_q4_K_x8 != &dot_q4_K_x8_reference; }
}  // namespace

BufferType* CpuDevice::repacked_weight_type() { return repack_ && groups_have_a_kernel() ? &repack_type_ : nullptr; }

// The repack changes every q4_K product's speed, so benchmarks' machine lines say whether it ran.
std::string CpuDevice::description() const {
    const char* repack = !groups_have_a_kernel() ? "q4_K weights as rows (no grouped-rows kernel on this kernel set)"
                         : repack_              ? "q4_K weights repacked 8 rows at a time"
                                                : "q4_K weights as rows (repack=off)";
    return description_ + ", " + huge_pages_description(huge_pages_) + ", " + repack;
}

MemoryInfo CpuDevice::memory() const { return {available_memory_bytes(), physical_memory_bytes()}; }

DeviceCaps CpuDevice::caps() const {
    DeviceCaps c;
    c.buffer_from_host_ptr = true;
    return c;
}

Status CpuDevice::configure(std::string_view params) {
    XB_ASSIGN_OR_RETURN(CpuOptions options, parse_cpu_options(params));
    if (options.fail_alloc) alloc_failure_.arm(*options.fail_alloc);
    if (options.n_threads > 0) defaults_.n_threads = options.n_threads;
    if (options.huge_pages) huge_pages_ = *options.huge_pages;
    if (options.repack) repack_ = *options.repack;
    return Status::ok();
}

std::string CpuDevice::settings() const {
    const int fail = alloc_failure_.remaining();
    return "threads=" + std::to_string(defaults_.n_threads > 0 ? defaults_.n_threads : default_host_threads()) +
           ",fail_alloc=" + (fail > 0 ? std::to_string(fail) : std::string("none")) + ",huge_pages=" + (huge_pages_ ? "on" : "off") +
           ",repack=" + (repack_ ? "on" : "off");
}

Result<std::unique_ptr<Backend>> CpuDevice::init_backend(std::string_view params) {
    XB_ASSIGN_OR_RETURN(CpuOptions options, parse_cpu_options(params));
    if (options.fail_alloc) alloc_failure_.arm(*options.fail_alloc);
    if (options.huge_pages) huge_pages_ = *options.huge_pages;
    if (options.repack) repack_ = *options.repack;
    if (options.n_threads == 0) options.n_threads = defaults_.n_threads;
    return std::unique_ptr<Backend>(std::make_unique<CpuBackend>(*this, options));
}

Result<std::unique_ptr<Buffer>> CpuDevice::buffer_from_host_ptr(void* ptr, size_t size, size_t) {
    if (ptr == nullptr && size > 0) {
        return Status(StatusCode::InvalidArgument, "CPU: buffer_from_host_ptr needs a non-null pointer");
    }
    if (reinterpret_cast<uintptr_t>(ptr) % kHostAlignment != 0) {
        return Status(StatusCode::InvalidArgument, "CPU: host pointer must be " +
                                                       std::to_string(kHostAlignment) + "-byte aligned");
    }
    return std::unique_ptr<Buffer>(std::make_unique<HostBuffer>(from_ptr_type_, ptr, size));
}

bool CpuDevice::supports_op(const Tensor& op) const { return cpu_kernels::supports_node(op); }

void register_cpu_backend(Registry& registry) {
    BackendReg& reg = registry.add(std::make_unique<BackendReg>("CPU"));
    reg.add_device(std::make_unique<CpuDevice>(reg));
}

}  // namespace xb::cpu
