// The scheduler's execution: allocation of the split graph, input copies, split computes with
// events for pipeline parallelism, the eval callback, and profiling.
#include <algorithm>
#include <chrono>
#include <string>

#include "backend/modelled_link.hpp"
#include "backend/tensor_io.hpp"
#include "sched/scheduler.hpp"

namespace xb {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Event* Scheduler::event(BackendId backend, int copy) const {
    if (events_.empty()) return nullptr;
    return events_[backend.index()][static_cast<size_t>(copy)].get();
}

// Allocates the split graph, planning again when node assignments moved between buffer types or
// the graph no longer fits the plan.
Status Scheduler::alloc_splits() {
    bool moved = prev_node_ids_.size() != alloc_node_ids_.size() || prev_leaf_ids_.size() != alloc_leaf_ids_.size();
    auto changed = [&](const std::vector<int>& now, const std::vector<int>& before) {
        for (size_t i = 0; i < now.size() && !moved; ++i) {
            if (now[i] != before[i] && buft_at(BackendId(now[i])) != buft_at(BackendId(before[i]))) {
                moved = true;
            }
        }
    };
    changed(alloc_node_ids_, prev_node_ids_);
    changed(alloc_leaf_ids_, prev_leaf_ids_);
    if (moved || !galloc_->alloc_graph(alloc_graph_).is_ok()) {
        // Re-planning may move split inputs: nothing queued may still be reading them.
        synchronize();
        XB_RETURN_IF_ERROR(galloc_->reserve(alloc_graph_, alloc_node_ids_, alloc_leaf_ids_));
        XB_RETURN_IF_ERROR(galloc_->alloc_graph(alloc_graph_));
    }
    prev_node_ids_ = alloc_node_ids_;
    prev_leaf_ids_ = alloc_leaf_ids_;
    return Status::ok();
}

Status Scheduler::copy_split_input(const Split& split, Tensor& input, Tensor& copy) {
    Backend& dst_backend = backend_at(split.backend);
    Backend& src_backend = backend_at(backend_of(&input));
    Event* ev = event(split.backend, cur_copy_);
    if (input.is_input()) {
        // User inputs are copied right away, so the user may overwrite them once compute returns.
        if (ev != nullptr) {
            XB_RETURN_IF_ERROR(ev->synchronize());
        } else {
            dst_backend.synchronize();
        }
        return tensor_copy(input, copy);
    }
    // The split's backend must be done with this copy slot before it is overwritten.
    if (ev != nullptr) {
        XB_RETURN_IF_ERROR(ev->wait(dst_backend));
    } else {
        dst_backend.synchronize();
    }
    if (dst_backend.cpy_tensor_async(src_backend, input, copy)) return Status::ok();
    src_backend.synchronize();
    if (ev != nullptr) {
        XB_RETURN_IF_ERROR(ev->synchronize());
    } else {
        dst_backend.synchronize();
    }
    return tensor_copy(input, copy);
}

namespace {

// The host memory a copy between the host and a device reads or writes: the side in host memory.
HostMemory host_memory_of(const Tensor& src, const Tensor& dst) {
    const Buffer* from = storage_buffer(src);
    const Buffer* to = storage_buffer(dst);
    if (from == nullptr || to == nullptr || from->is_host() == to->is_host()) return HostMemory::None;
    const Buffer& host = from->is_host() ? *from : *to;
    return host.type().is_pinned() ? HostMemory::Pinned : HostMemory::Pageable;
}

}  // namespace

// Profiling: the copy's own time (queued work of both backends is done when a profiled split
// starts, so waiting for the destination measures the copy alone), its link and host memory, and a
// simulated link's model of it (the receiver models it when it simulates the link, else the sender).
void Scheduler::profile_split_input(const Split& split, const Tensor& input, const Tensor& copy, double seconds,
                                    SplitInputReport& report) {
    Backend& dst_backend = backend_at(split.backend);
    Backend& src_backend = backend_at(backend_of(&input));
    report.copy_seconds = seconds;
    report.host_memory = host_memory_of(input, copy);
    report.link_gbps = copy_link_gbps(src_backend, dst_backend).value_or(-1.0);
    const ModelledLink* dst_link = modelled_link(dst_backend);
    const ModelledLink* link = dst_link != nullptr ? dst_link : modelled_link(src_backend);
    if (link != nullptr) {
        report.modelled_seconds = link->modelled_copy_seconds(input, copy, dst_link != nullptr ? src_backend : dst_backend);
    }
}

Status Scheduler::copy_split_inputs(const Split& split, SplitReport& report) {
    for (size_t j = 0; j < split.inputs.size(); ++j) {
        Tensor* input = split.inputs[j];
        const BackendId src_b = backend_of(input);
        Tensor& copy = *copy_of(slot_of(input), split.backend, cur_copy_);
        const auto t0 = std::chrono::steady_clock::now();
        XB_RETURN_IF_ERROR(copy_split_input(split, *input, copy));
        copy_bytes_[src_b.index() * backends_.size() + split.backend.index()] += input->nbytes();
        if (!options_.profile || j >= report.inputs.size()) continue;
        backend_at(split.backend).synchronize();
        SplitInputReport& in = report.inputs[j];
        profile_split_input(split, *input, copy, seconds_since(t0), in);
        if (in.modelled_seconds >= 0) report.modelled_copy_seconds = std::max(report.modelled_copy_seconds, 0.0) + in.modelled_seconds;
    }
    return Status::ok();
}

// Computes one split; with an eval callback, in runs of nodes up to each node the user asks for.
Status Scheduler::compute_split(const Split& split) {
    Backend& backend = backend_at(split.backend);
    if (!eval_callback_) return backend.graph_compute_async(split.graph);
    const int n = split.graph.n_nodes();
    for (int j0 = 0; j0 < n; ++j0) {
        int j1 = j0;
        bool want = eval_callback_(*split.graph.node(j1), true);
        while (!want && j1 < n - 1) want = eval_callback_(*split.graph.node(++j1), true);
        XB_RETURN_IF_ERROR(backend.graph_compute(split.graph.view(j0, j1 + 1)));
        if (want && !eval_callback_(*split.graph.node(j1), false)) {
            return Status(StatusCode::Aborted, "scheduler: the eval callback stopped the computation at '" +
                                                   split.graph.node(j1)->display_name() + "'");
        }
        j0 = j1;
    }
    return Status::ok();
}

Status Scheduler::compute_splits() {
    copy_bytes_.assign(backends_.size() * backends_.size(), 0);
    if (options_.profile) report();  // the per-split timings are written into the report
    for (size_t i = 0; i < splits_.size(); ++i) {
        const Split& split = splits_[i];
        SplitReport dummy;
        SplitReport& rep = options_.profile ? report_.splits[i] : dummy;
        rep.modelled_copy_seconds = -1;  // summed over this compute's inputs, not over computes
        auto t0 = std::chrono::steady_clock::now();
        XB_RETURN_IF_ERROR(copy_split_inputs(split, rep));
        if (options_.profile) {
            XB_RETURN_IF_ERROR(synchronize_and_collect());
            rep.copy_seconds = seconds_since(t0);
            t0 = std::chrono::steady_clock::now();
        }
        XB_RETURN_IF_ERROR(compute_split(split));
        if (options_.profile) {
            XB_RETURN_IF_ERROR(synchronize_and_collect());
            rep.compute_seconds = seconds_since(t0);
        }
        if (!split.inputs.empty()) {
            if (Event* ev = event(split.backend, cur_copy_); ev != nullptr) {
                XB_RETURN_IF_ERROR(ev->record(backend_at(split.backend)));
            }
        }
    }
    report_.copy_bytes.clear();
    for (size_t s = 0; s < backends_.size(); ++s) {
        for (size_t d = 0; d < backends_.size(); ++d) {
            const size_t bytes = copy_bytes_[s * backends_.size() + d];
            if (bytes > 0) report_.copy_bytes[{backends_[s]->name(), backends_[d]->name()}] += bytes;
        }
    }
    return Status::ok();
}

}  // namespace xb
