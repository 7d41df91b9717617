// SimBackend: one asynchronous stream of a simulated device, and the sim's registration.
//
// Every *_async member and graph_compute_async queue work on the stream's worker thread and
// return at once. As with ggml (and CUDA), memory handed to set_tensor_async / get_tensor_async /
// cpy_tensor_async (host sources) must stay valid and unchanged until synchronize(); graphs are
// translated when they are queued, so the Graph object itself may go, but its tensors' buffers
// must live until synchronize(). Errors of queued work (an index out of range in get_rows) are
// kept and returned by take_async_error() (and so by graph_compute).
//
// Copies are counted in stats() with the stream's link model (sim_link.hpp: pinned host memory at
// the link's bandwidth, pageable at pageable_ratio of it); a fault setting
// perturbs the chosen node's output after it is computed (sim_fault.hpp).
#pragma once

#include <memory>

#include "backend/backend.hpp"
#include "backend/modelled_link.hpp"
#include "backend/registry.hpp"
#include "cpu_kernels/graph_executor.hpp"
#include "sim/sim_device.hpp"
#include "sim/sim_link.hpp"
#include "sim/sim_settings.hpp"
#include "sim/sim_stream.hpp"

namespace xb::sim {

class HostMirror;

class SimBackend final : public Backend, public ModelledLink {
public:
    SimBackend(SimDevice& device, SimSettings settings);

    const char* name() const override { return sim_device_->name(); }

    Status set_tensor_async(Tensor& t, const void* data, size_t offset, size_t size) override;
    Status get_tensor_async(const Tensor& t, void* data, size_t offset, size_t size) override;
    // dst in this device's memory; src in host memory or in any sim device's memory. A copy from
    // another sim stream runs on that stream (after the work that makes src) and this stream waits
    // for it, as CUDA does between streams.
    bool cpy_tensor_async(Backend& src_backend, const Tensor& src, Tensor& dst) override;
    void synchronize() override;
    Status take_async_error() override;

    // Validates and translates the graph now; computes it on the worker.
    Status graph_compute_async(const Graph& graph) override;
    Result<std::unique_ptr<GraphPlan>> graph_plan_create(const Graph& graph) override;
    // Queues the plan and waits for it; returns its status.
    Status graph_plan_compute(GraphPlan& plan) override;

    // Takes effect for graphs queued after the call.
    bool set_n_threads(int n_threads) override;
    // ModelledLink: the peer link for a copy from or to another simulated device, else the link,
    // at pageable_ratio of its bandwidth when the host side is pageable memory.
    double modelled_copy_seconds(const Tensor& src, const Tensor& dst, const Backend& other) const override;
    // bandwidth_gbps, or peer_bandwidth_gbps toward another simulated device.
    double link_gbps(const Backend& other) const override;

    // --- the simulator's own interface ---
    SimDevice& sim_device() const { return *sim_device_; }
    // The stream settings this backend was made with.
    const SimSettings& settings() const { return settings_; }
    // The copies this stream has made (completed ones: synchronize first).
    SimStats stats() const { return copies_.snapshot(); }
    void reset_stats() { copies_.reset(); }
    Stream& stream() { return stream_; }

private:
    Status check_supported(const Graph& graph) const;
    void enqueue_compute(std::shared_ptr<const HostMirror> mirror);
    // Queues a copy of `bytes` between host storages (either side may be device storage).
    void enqueue_copy(void* to, const void* from, size_t bytes, CopyKind kind);
    void record_copy(CopyKind kind, size_t bytes, bool pinned);
    Status compute(const HostMirror& mirror);  // on the worker

    SimDevice* sim_device_;
    const SimSettings settings_;
    cpu_kernels::GraphExecutor executor_;  // used by the worker only
    CopyCounter copies_;
    Stream stream_;  // last: destroyed (drained and joined) before what its operations use
};

}  // namespace xb::sim
