// F64: the exact reference device. It computes every node of any graph the tools build in double
// precision from values read exactly (exact/node_eval.hpp over exact/ops.hpp, the implementation
// op-check's float64 references use), and keeps f32 results as doubles between nodes
// (f64_buffer.hpp), so that what it computes is the graph's exact answer: the truth a comparison
// can judge two real backends against. It rounds only where the graph itself stores to a narrower
// type (a copy into an f16 or quantized cache); where a backend rounds inside an op (activations
// quantized to 8 bits for a quantized product, q to f16 in flash attention), it does not.
//
// It is no real device: type Reference, never picked by Registry::init_best or as a tool's default,
// used when named (backend-compare -b F64,CPU or --truth F64). Its memory is host memory, held
// wide: it reports half the host's, in the declared bytes the allocators count. It is slow by
// design (scalar double arithmetic; products and attention rows over OpenMP threads) and computes
// synchronously.
//
// Settings: threads=N (init_backend, set_n_threads): OpenMP threads for its products and attention;
// default as the CPU backend's (backend/host_threads.hpp).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "backend/backend.hpp"
#include "backend/registry.hpp"
#include "f64/f64_buffer.hpp"

namespace xb::f64 {

class F64Device final : public Device {
public:
    explicit F64Device(BackendReg& reg) : Device(reg), buffer_type_(*this) {}

    const char* name() const override { return "F64"; }
    std::string description() const override;
    // Half the host's memory: each declared byte takes two.
    MemoryInfo memory() const override;
    DeviceType type() const override { return DeviceType::Reference; }
    DeviceCaps caps() const override { return {}; }

    Result<std::unique_ptr<Backend>> init_backend(std::string_view params) override;
    BufferType& buffer_type() override { return buffer_type_; }

    // Every op, of every type it can read (all) and write (all but the formats without a quantizer).
    bool supports_op(const Tensor& op) const override;
    bool supports_buft(const BufferType& buft) const override { return &buft == &buffer_type_; }

private:
    F64BufferType buffer_type_;
};

class F64Backend final : public Backend {
public:
    F64Backend(F64Device& device, int n_threads) : Backend(device), n_threads_(n_threads) {}

    const char* name() const override { return "F64"; }
    // Every node in order, each in exact arithmetic; stops at the first error (naming the node) or
    // when the abort callback asks.
    Status graph_compute_async(const Graph& graph) override;

    bool set_n_threads(int n_threads) override;
    bool set_abort_callback(AbortCallback callback) override;

private:
    Status compute_node(Tensor& node) const;

    int n_threads_;
    AbortCallback abort_;
};

// Registers the "F64" backend family and its one device.
void register_f64_backend(Registry& registry);

}  // namespace xb::f64
