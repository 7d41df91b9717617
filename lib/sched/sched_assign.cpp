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

// The highest-priority backend that can read t's buffer and compute `op`; none when none can.
BackendId Scheduler::backend_from_buffer(const Tensor& t, const Tensor& op) const {
    if (t.buffer == nullptr || galloc_->owns(t)) return BackendId::none();
    for (int i = 0; i < n_backends(); ++i) {
        const BackendId b(i);
        if (backend_at(b).supports_buft(t.buffer->type()) && backend_at(b).supports_op(op)) return b;
    }
    return BackendId::none();
}

// A tensor in a buffer the user marked as weights (ggml's rule: its own buffer, not a view's).
bool Scheduler::is_weight(const Tensor& t) const {
    return t.buffer != nullptr && !galloc_->owns(t) && t.buffer->usage() == BufferUsage::Weights;
}

// Pass 1 for one tensor: where its memory or its weights already are.
Result<BackendId> Scheduler::backend_from_current(const Tensor& t, AssignReason& why) {
    BackendId b = backend_from_buffer(t, t);
    if (b.valid()) {
        why = AssignReason::PreallocDst;
        return b;
    }
    if (t.is_view()) {
        b = backend_from_buffer(*t.view_src, t);
        if (b.valid()) {
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
        return cpu_id();
    }
    // Ops with weights run where the weights are. Rope is skipped: its frequency-factor tensor is
    // too small to decide by.
    for (const Tensor* src : t.src) {
        if (src == nullptr || t.op == Op::Rope || !is_weight(*src)) continue;
        const BackendId src_backend = backend_from_buffer(*src, t);
        if (options_.op_offload && src_backend == cpu_id()) {
            for (int i = 0; i < src_backend.value(); ++i) {
                const BackendId h(i);
                if (backend_at(h).supports_op(t) && backend_at(h).offload_op(t)) {
                    why = AssignReason::Offload;
                    return h;
                }
            }
        }
        why = AssignReason::Weight;
        return src_backend;
    }
    return BackendId::none();
}

// Whether backend b can use t where it is (its buffer, or the buffer type of its assignment).
bool Scheduler::buffer_supported(const Tensor& t, int slot, BackendId b) {
    const Buffer* buf = fixed_storage(t);
    const BufferType* buft = nullptr;
    if (buf != nullptr) {
        buft = &buf->type();
    } else {
        BackendId tb = backend_of_[static_cast<size_t>(slot)];
        if (!tb.valid() && t.is_view()) tb = backend_of(t.view_src);
        if (tb.valid()) buft = buft_at(tb);
    }
    return buft != nullptr && backend_at(b).supports_buft(*buft);
}

// Pass 2: unassigned nodes follow their neighbour's backend where it supports them. With
// Spread::GpuOnly, CPU assignments do not spread: the CPU is used only where weights or inputs put it.
void Scheduler::expand(const Graph& graph, Spread spread, Direction direction) {
    const bool gpu_only = spread == Spread::GpuOnly;
    const bool down = direction == Direction::Down;
    const AssignReason why = gpu_only ? (down ? AssignReason::ExpandGpuDown : AssignReason::ExpandGpuUp)
                                      : (down ? AssignReason::ExpandDown : AssignReason::ExpandUp);
    BackendId cur;
    const int n = graph.n_nodes();
    for (int k = 0; k < n; ++k) {
        const int i = down ? k : n - 1 - k;
        const Tensor* node = graph.nodes()[static_cast<size_t>(i)];
        if (is_view_op(*node)) continue;
        const BackendId b = node_backend(i);
        if (b.valid()) {
            cur = (gpu_only && b == cpu_id()) ? BackendId::none() : b;
        } else if (cur.valid() && backend_at(cur).supports_op(*node)) {
            assign(node, cur, why);
        }
    }
}

// Pass 3: assigned nodes move to a higher-priority backend with the same buffer type that supports
// them and all their sources; unassigned ones (unsupported where expansion would have put them)
// go to the supporting backend that can use the most of their sources.
void Scheduler::upgrade_or_pick(const Graph& graph) {
    for (int n = 0; n < graph.n_nodes(); ++n) {
        const Tensor* node = graph.nodes()[static_cast<size_t>(n)];
        if (is_view_op(*node)) continue;
        const BackendId cur = node_backend(n);
        if (!cur.valid()) {
            int best_count = -1;
            for (int i = 0; i < n_backends(); ++i) {
                const BackendId b(i);
                if (!backend_at(b).supports_op(*node)) continue;
                int count = 0;
                for (int j = 0; j < kMaxSrc; ++j) {
                    const Tensor* src = node->src[j];
                    if (src == nullptr) continue;
                    const int slot = src_slot(n, j);
                    const bool placed = backend_of_[static_cast<size_t>(slot)].valid() ||
                                        (src->view_src && backend_of(src->view_src).valid());
                    if (placed && buffer_supported(*src, slot, b)) ++count;
                }
                if (count > best_count) {
                    best_count = count;
                    assign_slot(n, b, AssignReason::MostInputs);
                }
            }
            continue;
        }
        for (int i = 0; i < cur.value(); ++i) {
            const BackendId b(i);
            if (buft_at(b) != buft_at(cur) || !backend_at(b).supports_op(*node)) continue;
            bool all_sources = true;
            for (int j = 0; j < kMaxSrc && all_sources; ++j) {
                if (node->src[j] != nullptr && !buffer_supported(*node->src[j], src_slot(n, j), b)) all_sources = false;
            }
            if (all_sources) {
                assign_slot(n, b, AssignReason::Upgrade);
                break;
            }
        }
    }
}

// Pass 4: views go with their source; unassigned sources go with their consumer.
void Scheduler::assign_remaining_sources(const Graph& graph) {
    for (int n = 0; n < graph.n_nodes(); ++n) {
        const Tensor* node = graph.nodes()[static_cast<size_t>(n)];
        if (node->is_view() && !node_backend(n).valid()) {
            assign_slot(n, backend_of(node->view_src), AssignReason::FromView);
        }
        for (int j = 0; j < kMaxSrc; ++j) {
            const Tensor* src = node->src[j];
            const int slot = src_slot(n, j);
            if (src == nullptr || backend_of_[static_cast<size_t>(slot)].valid()) continue;
            if (src->is_view()) {
                assign_slot(slot, backend_of(src->view_src), AssignReason::FromView);
            } else {
                assign_slot(slot, node_backend(n), AssignReason::FromConsumer);
            }
        }
    }
}

Status Scheduler::assign_backends(const Graph& graph) {
    // The graph's tensors are slots 0.. in dense order (nodes, then leafs).
    auto pass1 = [&](const Tensor* t, int slot) -> Status {
        if (backend_of_[static_cast<size_t>(slot)].valid()) return Status::ok();  // a user assignment
        AssignReason why = AssignReason::None;
        XB_ASSIGN_OR_RETURN(const BackendId b, backend_from_current(*t, why));
        if (b.valid()) assign_slot(slot, b, why);
        return Status::ok();
    };
    for (int i = 0; i < graph.n_leafs(); ++i) XB_RETURN_IF_ERROR(pass1(graph.leafs()[static_cast<size_t>(i)], graph.n_nodes() + i));
    for (int i = 0; i < graph.n_nodes(); ++i) XB_RETURN_IF_ERROR(pass1(graph.nodes()[static_cast<size_t>(i)], i));
    expand(graph, Spread::GpuOnly, Direction::Down);
    expand(graph, Spread::GpuOnly, Direction::Up);
    expand(graph, Spread::All, Direction::Down);
    expand(graph, Spread::All, Direction::Up);
    upgrade_or_pick(graph);
    assign_remaining_sources(graph);
    for (int i = 0; i < graph.n_nodes(); ++i) {
        const Tensor* node = graph.nodes()[static_cast<size_t>(i)];
        if (!is_view_op(*node) && !node_backend(i).valid()) {
            return Status(StatusCode::NotSupported, "scheduler: no backend supports '" + node->display_name() + "' (" +
                                                        node->op_label() + ")");
        }
    }
    return Status::ok();
}

}  // namespace xb
