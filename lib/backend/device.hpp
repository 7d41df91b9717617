// Device: one piece of hardware (or a simulation of one) that makes backends and buffers
// (ggml_backend_device).
//
// Contract for a backend author:
//   - Ownership: a Device is owned by its BackendReg in the Registry and lives as long as the
//     Registry. Its buffer types are its own members (references to them stay valid as long). The
//     backends, buffers and events it makes belong to the caller (std::unique_ptr) and must not
//     outlive it.
//   - Thread safety: the queries (name, description, memory, type, caps, is_simulated, settings,
//     supports_op, supports_buft, offload_op, host_link_gbps) may be called from any thread, also
//     while its backends compute: the scheduler asks them on the host thread while streams run.
//     configure() must not run concurrently with any other use of the device or its backends.
//   - Errors: recoverable failures are statuses with the device's name in the message, never an
//     abort: InvalidArgument for bad settings, OutOfMemory for memory it cannot provide,
//     NotSupported for what it does not do (the defaults below say so).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "backend/buffer.hpp"
#include "backend/buffer_type.hpp"
#include "backend/event.hpp"
#include "core/status.hpp"
#include "core/tensor.hpp"

namespace xb {

class Backend;
class BackendReg;

enum class DeviceType {
    CPU,    // system memory
    GPU,    // dedicated memory
    Accel,  // accelerator used together with the CPU (BLAS): shares host memory
    // Not hardware: a device that computes a graph's exact answer to judge the others by (F64). Its
    // memory is its own (not host-readable); it is used only where named, never picked as a GPU or a
    // CPU would be (Registry::init_best, the tools' defaults).
    Reference,
};
const char* device_type_name(DeviceType type);

struct DeviceCaps {
    bool async = false;                 // asynchronous set/get/copy and compute
    bool host_buffer = false;           // a pinned host buffer type
    bool buffer_from_host_ptr = false;  // buffers over existing host memory
    bool events = false;                // Event support
};

struct DeviceProps {
    std::string name;
    std::string description;
    size_t memory_free = 0;
    size_t memory_total = 0;
    DeviceType type = DeviceType::CPU;
    DeviceCaps caps;
};

struct MemoryInfo {
    size_t free = 0;
    size_t total = 0;
};

class Device;

// OutOfMemory before an allocation that cannot succeed, e.g. "weights need 16.0 EiB, CPU has
// 22.1 GiB free": a clear error instead of a failed (or, with overcommit, a fatal) allocation.
// Devices that report no memory (total 0) are not checked.
Status check_device_memory(const Device& device, uint64_t bytes, std::string_view what);
// The same for a buffer of `buft`: host memory of another device's buffer type (a GPU's pinned
// host memory) is checked against the host's free memory, everything else against its device's.
Status check_buffer_type_memory(const BufferType& buft, uint64_t bytes, std::string_view what);

class Device {
public:
    explicit Device(BackendReg& reg) : reg_(&reg) {}
    virtual ~Device() = default;
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;

    virtual const char* name() const = 0;
    virtual std::string description() const = 0;
    virtual MemoryInfo memory() const = 0;
    virtual DeviceType type() const = 0;
    virtual DeviceCaps caps() const = 0;
    // A simulation of a device (the sim backend): never picked by Registry::init_best.
    virtual bool is_simulated() const { return false; }
    // Another library's device (ggml's, through lib/ggml_devices): used where named, never picked
    // by Registry::init_best, dev_by_type or as a tool's default device.
    virtual bool is_foreign() const { return false; }
    DeviceProps props() const;
    BackendReg& reg() const { return *reg_; }

    // Changes device-wide settings, given as "key=value,..." (the sim's supported ops, memory
    // size, link model...). Devices without settings accept only an empty string.
    virtual Status configure(std::string_view params) {
        if (params.empty()) return Status::ok();
        return Status(StatusCode::InvalidArgument, std::string(name()) + ": the device has no settings (got '" +
                                                       std::string(params) + "')");
    }
    // The current device-wide settings in the same "key=value,..." form ("" when none); shown by
    // the tools' --list-devices.
    virtual std::string settings() const { return {}; }

    // A new backend (stream) on this device. `params` is a comma-separated list of key=value
    // settings that the device documents (e.g. "threads=4"); unknown keys are InvalidArgument, a
    // stream or handle that cannot be made an error naming the cause. Any number of backends of one
    // device may exist at once, each used from one thread at a time.
    virtual Result<std::unique_ptr<Backend>> init_backend(std::string_view params = {}) = 0;
    // The device's own memory; the same object on every call.
    virtual BufferType& buffer_type() = 0;
    // Pinned host memory for fast transfers, when the device has it (caps().host_buffer). The CPU
    // computes in it (is_host); placements put the weights that stay on the host there.
    virtual BufferType* host_buffer_type() { return nullptr; }
    // A buffer type keeping weights in a layout this device's kernels read faster (ggml's extra
    // buffer types, as its CPU repack), for the weights placement finds it can take; none by default.
    virtual BufferType* repacked_weight_type() { return nullptr; }
    // The bandwidth in GB/s (10^9 bytes/s) of a copy from pinned host memory to the device's
    // memory: what the link carries at best, for reports to set achieved copy rates against. The
    // simulated device answers its modelled link; CUDA measures it once, on the first call, with a
    // timed pinned copy. Default: unknown (the CPU has no such link).
    virtual std::optional<double> host_link_gbps() { return std::nullopt; }
    // A buffer over existing host memory (not owned), when caps().buffer_from_host_ptr.
    virtual Result<std::unique_ptr<Buffer>> buffer_from_host_ptr(void* ptr, size_t size, size_t max_tensor_size) {
        (void)ptr;
        (void)size;
        (void)max_tensor_size;
        return Status(StatusCode::NotSupported, std::string(name()) + ": buffers from host pointers are not supported");
    }

    // The device can compute `op` (its op, types and layouts); a pure function of the tensor's
    // metadata (and, for layouts, its data address), never an error: the scheduler puts what a
    // device refuses on another one.
    virtual bool supports_op(const Tensor& op) const = 0;
    // Why supports_op(op) is false, for reports ("" when it is true). Default: "<device> does not
    // support <op>"; a device that knows more (ggml's: which of ggml's rules) says it.
    virtual std::string unsupported_reason(const Tensor& op) const;
    // The device's backends can read and write tensors in buffers of `buft` without a copy.
    virtual bool supports_buft(const BufferType& buft) const = 0;
    // Worth moving `op` here even though its weights are elsewhere (large batches): the scheduler
    // then copies the weights in for the op.
    virtual bool offload_op(const Tensor& op) const {
        (void)op;
        return false;
    }

    // The batch by which GPU devices judge offload_op, as ggml's do: mul_mat's columns, the tokens
    // of mul_mat_id and rope (ne[2]: a mixture-of-experts product of one token has n_used
    // columns), 0 for get_rows (never worth moving), else the rows.
    static int64_t offload_batch(const Tensor& op) {
        switch (op.op) {
            case Op::GetRows: return 0;
            case Op::MulMat: return op.ne[1];
            case Op::MulMatId:
            case Op::Rope: return op.ne[2];
            default: return op.nrows();
        }
    }

    // A new event for this device's backends to record and wait on (caps().events).
    virtual Result<std::unique_ptr<Event>> event_new() {
        return Status(StatusCode::NotSupported, std::string(name()) + ": events are not supported");
    }

private:
    BackendReg* reg_;
};

}  // namespace xb
