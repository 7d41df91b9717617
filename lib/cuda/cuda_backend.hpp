// CudaBackend: one stream on one GPU (ggml_backend for CUDA).
//
// Every *_async member and graph_compute_async queue work on the backend's own non-blocking stream
// and return at once; synchronize() waits for it. As with ggml, host memory handed to
// set_tensor_async / get_tensor_async must stay valid and unchanged until synchronize(), and the
// buffers of a queued graph must outlive its computation. Errors met by queued work (a CUDA
// failure, an index out of range found by a kernel) are kept and returned by take_async_error()
// (and so by graph_compute), together with failures of the device's synchronous buffer operations.
//
// Graphs may hold every op that supports_node accepts; all their tensors must be in this GPU's
// memory (supports_buft), which graph_compute_async checks before queuing anything: a kernel that
// touched other memory would fault and leave the device unusable.
#pragma once

#include <array>
#include <memory>

#include "backend/backend.hpp"
#include "cuda/cuda_device.hpp"
#include "cuda/cuda_graph.hpp"
#include "cuda/cuda_handles.hpp"
#include "cuda/cuda_settings.hpp"
#include "cuda/device_scratch.hpp"
#include "cuda/graph_replay.hpp"
#include "cuda/kernel_error_channel.hpp"
#include "cuda/kernels.hpp"
#include "cuda/row_split_products.hpp"

namespace xb::cuda {

class CudaBackend final : public Backend {
public:
    static Result<std::unique_ptr<CudaBackend>> create(CudaDevice& device, CudaSettings settings);
    // Waits for queued work: it may use this backend's scratch and handles.
    ~CudaBackend() override;

    const char* name() const override { return device_->name(); }

    Status set_tensor_async(Tensor& t, const void* data, size_t offset, size_t size) override;
    Status get_tensor_async(const Tensor& t, void* data, size_t offset, size_t size) override;
    // dst in this GPU's memory, src in the memory of any CUDA backend's GPU (the same stream, another
    // stream of this GPU, or a peer GPU). The copy runs on src's stream after the work queued on
    // both streams, and later work on both streams runs after it, so neither side's buffers are
    // reused too early. Also src in a weights buffer of CUDA-pinned host memory (the host weights
    // of an offload placement): a DMA upload queued on this stream, after src's backend has
    // finished its queued work; weights do not change while graphs run, so the host never waits
    // for it. Pinned compute memory is left to the synchronous path, since the CPU may reuse it
    // before a queued upload has read it. False for other memory (the caller then copies
    // synchronously).
    bool cpy_tensor_async(Backend& src_backend, const Tensor& src, Tensor& dst) override;
    void synchronize() override;
    Status take_async_error() override;

    Status graph_compute_async(const Graph& graph) override;

    // --- the CUDA backend's own interface ---
    CudaDevice& cuda_device() const { return *device_; }
    cudaStream_t stream() const { return stream_.get(); }
    const CudaSettings& settings() const { return settings_; }
    // Graph computes captured into a CUDA graph, and replayed from one (graphs=1).
    const GraphReplayPolicy& graph_replay() const { return graph_replay_; }

private:
    CudaBackend(CudaDevice& device, CudaSettings settings, StreamPtr stream, EventPtr copy_event, CublasPtr cublas,
                KernelErrorChannel kernel_errors);

    // Allocated, supported, and every tensor it reads or writes inside this GPU's memory.
    Status check_graph(const Graph& graph) const;
    Status check_reachable(const Tensor& node, const Tensor& t) const;
    Status copy_from_peer_stream(CudaBackend& from, const Tensor& src, Tensor& dst, size_t bytes);
    // The pinned-weights upload of cpy_tensor_async; false when src is not such memory.
    bool upload_pinned_weights(Backend& src_backend, const Tensor& src, Tensor& dst);
    // Keeps the first error for take_async_error.
    void keep(Status error);
    // Queues each node's kernels on the stream.
    Status launch_nodes(const Graph& graph, LaunchContext ctx);
    // What the launches of `graph` with `ctx` depend on; empty for a graph that is never captured
    // (products split over several GPUs, which queue work on their streams too).
    GraphKey replay_key(const Graph& graph, const LaunchContext& ctx) const;
    // Captures the launches into a CUDA graph held at `place` and queues it; node by node if the
    // capture or its launch fails.
    Status capture_and_launch(const Graph& graph, const LaunchContext& ctx, int place);
    // Queues the graph captured at `place`; node by node if it cannot be launched.
    Status replay(const Graph& graph, const LaunchContext& ctx, int place);

    CudaDevice* device_;
    CudaSettings settings_;
    StreamPtr stream_;      // first: destroyed last, after everything that queues work on it
    EventPtr copy_event_;   // marks this stream's tail for copies that other streams make
    CublasPtr cublas_;
    KernelErrorChannel kernel_errors_;
    DeviceScratch scratch_;
    RowSplitProducts row_split_;  // products of weights split by rows over several GPUs
    // A captured graph and its kernels' error slots, added at each replay.
    struct CapturedGraph {
        ReplayableGraph exec;
        std::vector<std::string> error_labels;
    };
    GraphReplayPolicy graph_replay_;
    std::array<CapturedGraph, GraphReplayPolicy::kHeldGraphs> captured_;  // at the policy's places
    Status async_error_;
};

}  // namespace xb::cuda
