// The scheduler's assignment passes 1-4: which backend computes each node (see scheduler.hpp).
#include <string>

#include "backend/tensor_io.hpp"
#include "sched/scheduler.hpp"

namespace xb {

namespace {

bool is_view_op(const Tensor& t) { return op_is_view(t.op); }

}  // namespace

// The buffer t lives in when that memory is fixed: pre-allocated by the user, not by this
// scheduler's compute buffers (whose placements are redone on every split).
const Buffer* Scheduler::fixed_storage(const Tensor& t) const {
    const Buffer* b = storage_buffer(t);
    return b != nullptr && !galloc_->owns(t) ? b : nullptr;
}

// The highest-priority backend that can read t's buffer and compute `op`; -1 when none.
int Scheduler::backend_from_buffer(const Tensor& t, const Tensor& op) const {
    if (t.buffer == nullptr || galloc_->owns(t)) return -1;
    for (int b = 0; b < n_backends(); ++b) {
        if (backends_[static_cast<size_t>(b)]->supports_buft(t.buffer->type()) &&
            backends_[static_cast<size_t>(b)]->supports_op(op)) {
            return b;
        }
    }
    return -1;
}

// A tensor in a buffer the user marked as weights (ggml's rule: its own buffer, not a view's).
bool Scheduler::is_weight(const Tensor& t) const {
    return t.buffer != nullptr && !galloc_->owns(t) && t.buffer->usage() == BufferUsage::Weights;
}

// Pass 1 for one tensor: where its memory or its weights already are.
Result<int> Scheduler::backend_from_current(const Tensor& t, AssignReason& why) {
    int b = backend_from_buffer(t, t);
    if (b != -1) {
        why = AssignReason::PreallocDst;
        return b;
    }
    if (t.view_src != nullptr) {
        b = backend_from_buffer(*t.view_src, t);
        if (b != -1) {
            why = AssignReason::PreallocView;
            return b;
        }
    }
    if (fixed_storage(t) != nullptr) {
        // Its memory cannot move, and no backend that reads that memory computes the op.
        return Status(StatusCode::NotSupported, "scheduler: '" + t.display_name() + "' (" + t.op_label() +
                                                    ") lives in a " + fixed_storage(t)->name() +
                                                    " buffer, but no backend that can use that buffer supports the op");
    }
    if (t.is_input()) {
        why = AssignReason::GraphInput;
        return n_backends() - 1;
    }
    // Ops with weights run where the weights are. Rope is skipped: its frequency-factor tensor is
    // too small to decide by.
    for (const Tensor* src : t.src) {
        if (src == nullptr || t.op == Op::Rope || !is_weight(*src)) continue;
        const int src_backend = backend_from_buffer(*src, t);
        if (options_.op_offload && src_backend == n_backends() - 1) {
            for (int h = 0; h < src_backend; ++h) {
                if (backends_[static_cast<size_t>(h)]->supports_op(t) && backends_[static_cast<size_t>(h)]->offload_op(t)) {
                    why = AssignReason::Offload;
                    return h;
                }
            }
        }
        why = AssignReason::Weight;
        return src_backend;
    }
    return -1;
}

// Whether backend b can use t where it is (its buffer, or the buffer type of its assignment).
bool Scheduler::buffer_supported(const Tensor& t, int b) {
    const Buffer* buf = fixed_storage(t);
    const BufferType* buft = nullptr;
    if (buf != nullptr) {
        buft = &buf->type();
    } else {
        int tb = backend_of(&t);
        if (tb == -1 && t.view_src != nullptr) tb = backend_of(t.view_src);
        if (tb != -1) buft = bufts_[static_cast<size_t>(tb)];
    }
    return buft != nullptr && backends_[static_cast<size_t>(b)]->supports_buft(*buft);
}

// Pass 2: unassigned nodes follow their neighbour's backend where it supports them. With
// gpu_only, CPU assignments do not spread: the CPU is used only where weights or inputs put it.
void Scheduler::expand(const Graph& graph, bool gpu_only, bool down) {
    const AssignReason why = gpu_only ? (down ? AssignReason::ExpandGpuDown : AssignReason::ExpandGpuUp)
                                      : (down ? AssignReason::ExpandDown : AssignReason::ExpandUp);
    int cur = -1;
    const int n = graph.n_nodes();
    for (int k = 0; k < n; ++k) {
        const int i = down ? k : n - 1 - k;
        const Tensor* node = graph.nodes()[static_cast<size_t>(i)];
        if (is_view_op(*node)) continue;
        const int b = node_backend(i);
        if (b != -1) {
            cur = (gpu_only && b == n_backends() - 1) ? -1 : b;
        } else if (cur != -1 && backends_[static_cast<size_t>(cur)]->supports_op(*node)) {
            assign(node, cur, why);
        }
    }
}

// Pass 3: assigned nodes move to a higher-priority backend with the same buffer type that supports
// them and all their sources; unassigned ones (unsupported where expansion would have put them)
// go to the supporting backend that can use the most of their sources.
void Scheduler::upgrade_or_pick(const Graph& graph) {
    for (const Tensor* node : graph.nodes()) {
        if (is_view_op(*node)) continue;
        const int cur = backend_of(node);
        if (cur == -1) {
            int best_count = -1;
            for (int b = 0; b < n_backends(); ++b) {
                if (!backends_[static_cast<size_t>(b)]->supports_op(*node)) continue;
                int count = 0;
                for (const Tensor* src : node->src) {
                    if (src == nullptr) continue;
                    const bool placed = backend_of(src) != -1 || (src->view_src && backend_of(src->view_src) != -1);
                    if (placed && buffer_supported(*src, b)) ++count;
                }
                if (count > best_count) {
                    best_count = count;
                    assign(node, b, AssignReason::MostInputs);
                }
            }
            continue;
        }
        for (int b = 0; b < cur; ++b) {
            if (bufts_[static_cast<size_t>(b)] != bufts_[static_cast<size_t>(cur)] ||
                !backends_[static_cast<size_t>(b)]->supports_op(*node)) {
                continue;
            }
            bool all_sources = true;
            for (const Tensor* src : node->src) {
                if (src != nullptr && !buffer_supported(*src, b)) {
                    all_sources = false;
                    break;
                }
            }
            if (all_sources) {
                assign(node, b, AssignReason::Upgrade);
                break;
            }
        }
    }
}

// Pass 4: views go with their source; unassigned sources go with their consumer.
void Scheduler::assign_remaining_sources(const Graph& graph) {
    for (const Tensor* node : graph.nodes()) {
        if (node->view_src != nullptr && backend_of(node) == -1) {
            assign(node, backend_of(node->view_src), AssignReason::FromView);
        }
        for (const Tensor* src : node->src) {
            if (src == nullptr || backend_of(src) != -1) continue;
            if (src->view_src != nullptr) {
                assign(src, backend_of(src->view_src), AssignReason::FromView);
            } else {
                assign(src, backend_of(node), AssignReason::FromConsumer);
            }
        }
    }
}

Status Scheduler::assign_backends(const Graph& graph) {
    auto pass1 = [&](const Tensor* t) -> Status {
        if (backend_of(t) != -1) return Status::ok();  // a user assignment
        AssignReason why = AssignReason::None;
        XB_ASSIGN_OR_RETURN(const int b, backend_from_current(*t, why));
        if (b != -1) assign(t, b, why);
        return Status::ok();
    };
    for (const Tensor* leaf : graph.leafs()) XB_RETURN_IF_ERROR(pass1(leaf));
    for (const Tensor* node : graph.nodes()) XB_RETURN_IF_ERROR(pass1(node));
    expand(graph, /*gpu_only=*/true, /*down=*/true);
    expand(graph, /*gpu_only=*/true, /*down=*/false);
    expand(graph, /*gpu_only=*/false, /*down=*/true);
    expand(graph, /*gpu_only=*/false, /*down=*/false);
    upgrade_or_pick(graph);
    assign_remaining_sources(graph);
    for (const Tensor* node : graph.nodes()) {
        if (!is_view_op(*node) && backend_of(node) == -1) {
            return Status(StatusCode::NotSupported, "scheduler: no backend supports '" + node->display_name() + "' (" +
                                                        node->op_label() + ")");
        }
    }
    return Status::ok();
}

}  // namespace xb
