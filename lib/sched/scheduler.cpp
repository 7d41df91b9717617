#include "sched/scheduler.hpp"

#include <cstdlib>
#include <string>

namespace xb {

Result<std::unique_ptr<Scheduler>> Scheduler::create(std::vector<Backend*> backends, std::vector<BufferType*> bufts,
                                                     SchedulerOptions options) {
    if (backends.empty()) return Status(StatusCode::InvalidArgument, "scheduler: no backends given");
    if (backends.size() > kMaxBackends) {
        return Status(StatusCode::InvalidArgument, "scheduler: at most " + std::to_string(kMaxBackends) +
                                                       " backends (got " + std::to_string(backends.size()) + ")");
    }
    for (Backend* b : backends) {
        if (b == nullptr) return Status(StatusCode::InvalidArgument, "scheduler: a backend is null");
    }
    if (backends.back()->device().type() != DeviceType::CPU) {
        // Say what to write instead: the same list with the CPU last.
        std::string fixed;
        for (const Backend* b : backends) {
            if (b->device().type() != DeviceType::CPU) fixed += std::string(b->name()) + ",";
        }
        return Status(StatusCode::InvalidArgument, std::string("scheduler: the last backend must be the CPU (got ") +
                                                       backends.back()->name() + "); list it last, e.g. " + fixed + "CPU");
    }
    if (!bufts.empty() && bufts.size() != backends.size()) {
        return Status(StatusCode::InvalidArgument, "scheduler: give one buffer type per backend, or none");
    }
    bufts.resize(backends.size(), nullptr);
    for (size_t i = 0; i < backends.size(); ++i) {
        if (bufts[i] == nullptr) bufts[i] = &backends[i]->default_buffer_type();
        if (!backends[i]->supports_buft(*bufts[i])) {
            return Status(StatusCode::InvalidArgument, std::string("scheduler: backend ") + backends[i]->name() +
                                                           " cannot use buffer type " + bufts[i]->name());
        }
    }
    if (options.n_copies < 1) return Status(StatusCode::InvalidArgument, "scheduler: n_copies must be at least 1");
    std::unique_ptr<Scheduler> s(new Scheduler(std::move(backends), std::move(bufts), options));
    return s;
}

Scheduler::Scheduler(std::vector<Backend*> backends, std::vector<BufferType*> bufts, SchedulerOptions options)
    : backends_(std::move(backends)), bufts_(std::move(bufts)), options_(options),
      galloc_(std::make_unique<GraphAllocator>(bufts_)) {
    for (BufferType* buft : bufts_) buft_readers_by_backend_.push_back(readers_of(*buft));
    if (options_.n_copies > 1) {
        events_.resize(backends_.size());
        for (size_t b = 0; b < backends_.size(); ++b) {
            for (int c = 0; c < options_.n_copies; ++c) {
                auto ev = backends_[b]->device().event_new();
                events_[b].push_back(ev.is_ok() ? std::move(ev).value() : nullptr);  // null: synchronize instead
            }
        }
    }
}

Scheduler::~Scheduler() {
    synchronize();
    restore_sources();
}

BackendId Scheduler::id_of_backend(const Backend& b) const {
    for (size_t i = 0; i < backends_.size(); ++i) {
        if (backends_[i] == &b) return BackendId(static_cast<int>(i));
    }
    return BackendId::none();
}

size_t Scheduler::buffer_size(const Backend& backend) const {
    const BackendId b = id_of_backend(backend);
    return b.valid() ? galloc_->buffer_size(b.value()) : 0;
}

Status Scheduler::set_tensor_backend(const Tensor& node, Backend& backend) {
    const BackendId b = id_of_backend(backend);
    if (!b.valid()) {
        return Status(StatusCode::InvalidArgument, std::string("scheduler: backend ") + backend.name() +
                                                       " is not one of the scheduler's backends");
    }
    user_assignments_.set(&node, b.value());
    if (find_slot(&node) >= 0) assign(&node, b, AssignReason::User);
    is_alloc_ = false;
    return Status::ok();
}

Backend* Scheduler::tensor_backend(const Tensor& t) const {
    BackendId b;
    if (const int slot = find_slot(&t); slot >= 0) b = backend_of_[static_cast<size_t>(slot)];
    if (!b.valid()) b = BackendId(user_assignments_.find(&t));
    return b.valid() ? &backend_at(b) : nullptr;
}

void Scheduler::reset() {
    restore_sources();
    user_assignments_.clear();
    // The per-tensor state of the last split goes with it: that graph may be gone after a reset.
    current_graph_ = nullptr;
    tensors_.clear();
    backend_of_.clear();
    reason_of_.clear();
    copies_.clear();
    op_support_.clear();
    outside_slots_.clear();
    is_alloc_ = false;
}

void Scheduler::synchronize() {
    for (Backend* b : backends_) b->synchronize();
}

Status Scheduler::reserve(Graph& graph) {
    XB_RETURN_IF_ERROR(split_graph(graph));
    XB_RETURN_IF_ERROR(galloc_->reserve(alloc_graph_, alloc_node_ids_, alloc_leaf_ids_));
    prev_node_ids_ = alloc_node_ids_;
    prev_leaf_ids_ = alloc_leaf_ids_;
    reset();
    synchronize();
    return Status::ok();
}

Status Scheduler::alloc_graph(Graph& graph) {
    is_alloc_ = false;
    cur_copy_ = next_copy_;
    next_copy_ = (next_copy_ + 1) % options_.n_copies;
    XB_RETURN_IF_ERROR(split_graph(graph));
    XB_RETURN_IF_ERROR(alloc_splits());
    is_alloc_ = true;
    return Status::ok();
}

Status Scheduler::graph_compute_async(Graph& graph) {
    if (!is_alloc_ || current_graph_ != &graph) XB_RETURN_IF_ERROR(alloc_graph(graph));
    return compute_splits();
}

Status Scheduler::graph_compute(Graph& graph) {
    Status s = graph_compute_async(graph);
    Status queued = synchronize_and_collect();
    return s.is_ok() ? queued : s;
}

Status Scheduler::synchronize_and_collect() {
    Status first;
    for (Backend* b : backends_) {
        b->synchronize();
        Status e = b->take_async_error();
        if (first.is_ok() && !e.is_ok()) first = std::move(e);
    }
    return first;
}

}  // namespace xb
