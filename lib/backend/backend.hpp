// Backend: one execution stream on a device (ggml_backend).
//
// Contract for a backend author:
//   - Ordering: work submitted with the *_async members runs in submission order and may still be
//     running when they return; synchronize() waits for it. Backends without a queue implement the
//     async members synchronously (the defaults).
//   - Errors: a member's status reports what went wrong before its work was queued; errors the
//     queued work meets later are kept and returned once by take_async_error (graph_compute
//     returns them). A failed computation leaves the backend usable.
//   - Thread safety: a Backend is used from one host thread at a time; its own workers may run
//     concurrently with that thread. Different backends (of one device or several) are independent.
//   - Ownership: owned by the caller (std::unique_ptr); it must outlive its queued work's buffers'
//     use, which synchronize() (or the destructor, which waits) guarantees.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "backend/buffer.hpp"
#include "backend/device.hpp"
#include "backend/event.hpp"
#include "core/graph.hpp"
#include "core/status.hpp"

namespace xb {

// A graph prepared for repeated computation on one backend (ggml_backend_graph_plan).
class GraphPlan {
public:
    virtual ~GraphPlan() = default;
};

// Returns true to stop a running computation (checked between nodes).
using AbortCallback = std::function<bool()>;

class Backend {
public:
    explicit Backend(Device& device) : device_(&device) {}
    virtual ~Backend() = default;
    Backend(const Backend&) = delete;
    Backend& operator=(const Backend&) = delete;

    virtual const char* name() const = 0;
    Device& device() const { return *device_; }

    BufferType& default_buffer_type() const { return device_->buffer_type(); }
    Result<std::unique_ptr<Buffer>> alloc_buffer(size_t size) const { return default_buffer_type().alloc_buffer(size); }
    size_t alignment() const { return default_buffer_type().alignment(); }
    size_t max_size() const { return default_buffer_type().max_size(); }

    // --- asynchronous transfers; the arguments are checked by tensor_io.hpp's wrappers ---
    // The status of queueing; errors the queued transfer meets later come from take_async_error.
    // Default (no queue): the buffer's synchronous transfer.
    virtual Status set_tensor_async(Tensor& t, const void* data, size_t offset, size_t size);
    virtual Status get_tensor_async(const Tensor& t, void* data, size_t offset, size_t size);
    // Copies src (owned by `src_backend`'s device) into dst (this backend's) on this stream; false
    // when this backend cannot do it, and the caller falls back to a synchronous copy.
    virtual bool cpy_tensor_async(Backend& src_backend, const Tensor& src, Tensor& dst) {
        (void)src_backend;
        (void)src;
        (void)dst;
        return false;
    }
    // Waits for all work queued on this backend.
    virtual void synchronize() {}
    // The first error that queued work met since the last call (Ok when none), cleared by the call.
    // Backends that run their work at once report errors from the calls themselves.
    virtual Status take_async_error() { return Status::ok(); }

    // --- graph computation ---
    // Queues the computation of every node of `graph` (already allocated).
    virtual Status graph_compute_async(const Graph& graph) = 0;
    // graph_compute_async, then synchronize; the status of either, including the errors that the
    // queued work met (take_async_error).
    Status graph_compute(const Graph& graph);

    virtual Result<std::unique_ptr<GraphPlan>> graph_plan_create(const Graph& graph) {
        (void)graph;
        return Status(StatusCode::NotSupported, std::string(name()) + ": graph plans are not supported");
    }
    virtual Status graph_plan_compute(GraphPlan& plan) {
        (void)plan;
        return Status(StatusCode::NotSupported, std::string(name()) + ": graph plans are not supported");
    }

    // --- what the device can do, for this backend ---
    bool supports_op(const Tensor& op) const { return device_->supports_op(op); }
    bool supports_buft(const BufferType& buft) const { return device_->supports_buft(buft); }
    bool offload_op(const Tensor& op) const { return device_->offload_op(op); }

    // --- optional settings; false when the backend has no such setting ---
    virtual bool set_n_threads(int n_threads) {
        (void)n_threads;
        return false;
    }
    virtual bool set_abort_callback(AbortCallback callback) {
        (void)callback;
        return false;
    }

private:
    Device* device_;
};

}  // namespace xb
