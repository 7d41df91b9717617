// The scheduler's assignment passes 1-4: which backend computes each node (see scheduler.hpp).
#include <string>

#include "backend/tensor_io.hpp"
#include "sched/scheduler.hpp"

namespace xb {

bool Scheduler::computes(int slot, const Tensor& op, BackendId b) {
    // Bit b: backend b was asked; bit kMaxBackends + b: its answer.
    uint32_t& bits = op_support_[static_cast<size_t>(slot)];
    const uint32_t asked = 1u << b.index();
    const uint32_t yes = asked << kMaxBackends;
    if ((bits & asked) == 0) bits |= asked | (backend_at(b).supports_op(op) ? yes : 0u);
    return (bits & yes) != 0;
}

Scheduler::Readers Scheduler::readers_of(const BufferType& buft) {
    for (const auto& [known, readers] : buft_readers_) {
        if (known == &buft) return readers;
    }
    Readers readers = 0;
    for (int i = 0; i < n_backends(); ++i) {
        if (backends_[static_cast<size_t>(i)]->supports_buft(buft)) readers |= Readers(1u << i);
    }
    buft_readers_.emplace_back(&buft, readers);
    return readers;
}

BackendId Scheduler::backend_from_buffer(Readers readers, int op_slot, const Tensor& op) {
    for (int i = 0; i < n_backends(); ++i) {
        const BackendId b(i);
        if (reads(readers, b) && computes(op_slot, op, b)) return b;
    }
    return BackendId::none();
}

Scheduler::SlotFacts Scheduler::facts_of(const Tensor& t) {
    SlotFacts f;
    // Buffers of the allocator's are redone on every split: only other ones are fixed.
    const Buffer* storage = storage_buffer(t);
    f.input = t.is_input();
    f.view_op = op_is_view(t.op);
    if (storage == nullptr && t.buffer == nullptr) return f;
    const bool placed_here = galloc_->owns(t);
    if (storage != nullptr && !placed_here) {
        f.fixed = true;
        f.fixed_readers = readers_of(storage->type());
    }
    if (t.buffer != nullptr && !placed_here) {
        f.buffer_readers = t.buffer == storage ? f.fixed_readers : readers_of(t.buffer->type());
        f.weight = t.buffer->usage() == BufferUsage::Weights;  // ggml's rule: its own buffer, not a view's
    }
    return f;
}

// Pass 1 for one tensor: where its memory or its weights already are.
Result<BackendId> Scheduler::backend_from_current(const Tensor& t, int slot, AssignReason& why) {
    const SlotFacts& f = facts(slot);
    BackendId b = backend_from_buffer(f.buffer_readers, slot, t);
    if (b.valid()) {
        why = AssignReason::PreallocDst;
        return b;
    }
    if (f.view_src >= 0) {
        b = backend_from_buffer(facts(f.view_src).buffer_readers, slot, t);
        if (b.valid()) {
            why = AssignReason::PreallocView;
            return b;
        }
    }
    if (f.fixed) {
        // Its memory cannot move, and no backend that reads that memory computes the op.
        return Status(StatusCode::NotSupported, "scheduler: '" + t.display_name() + "' (" + t.op_label() +
                                                    ") lives in a " + storage_buffer(t)->name() +
                                                    " buffer, but no backend that can use that buffer supports the op");
    }
    if (f.input) {
        why = AssignReason::GraphInput;
        return cpu_id();
    }
    // Ops with weights run where the weights are. Rope is skipped: its frequency-factor tensor is
    // too small to decide by. (Only nodes have sources: leafs have no op.)
    for (int j = 0; j < f.n_src; ++j) {
        const int src = src_slot(slot, j);
        if (src < 0 || t.op == Op::Rope || !facts(src).weight) continue;
        const BackendId src_backend = backend_from_buffer(facts(src).buffer_readers, slot, t);
        if (options_.op_offload && src_backend == cpu_id()) {
            for (int i = 0; i < src_backend.value(); ++i) {
                const BackendId h(i);
                if (computes(slot, t, h) && backend_at(h).offload_op(t)) {
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

bool Scheduler::buffer_supported(int slot, BackendId b) const {
    const SlotFacts& f = facts(slot);
    if (f.fixed) return reads(f.fixed_readers, b);
    BackendId tb = backend_of_[static_cast<size_t>(slot)];
    if (!tb.valid() && f.view_src >= 0) tb = backend_of_[static_cast<size_t>(f.view_src)];
    return tb.valid() && reads(buft_readers_by_backend_[tb.index()], b);
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
        if (facts(i).view_op) continue;
        const BackendId b = node_backend(i);
        if (b.valid()) {
            cur = (gpu_only && b == cpu_id()) ? BackendId::none() : b;
        } else if (cur.valid() && computes(i, *graph.nodes()[static_cast<size_t>(i)], cur)) {
            assign_slot(i, cur, why);
        }
    }
}

// Pass 3: assigned nodes move to a higher-priority backend with the same buffer type that supports
// them and all their sources; unassigned ones (unsupported where expansion would have put them)
// go to the supporting backend that can use the most of their sources.
void Scheduler::upgrade_or_pick(const Graph& graph) {
    for (int n = 0; n < graph.n_nodes(); ++n) {
        if (facts(n).view_op) continue;
        const Tensor* node = graph.nodes()[static_cast<size_t>(n)];
        const BackendId cur = node_backend(n);
        if (!cur.valid()) {
            int best_count = -1;
            for (int i = 0; i < n_backends(); ++i) {
                const BackendId b(i);
                if (!computes(n, *node, b)) continue;
                int count = 0;
                for (int j = 0; j < facts(n).n_src; ++j) {
                    const int slot = src_slot(n, j);
                    if (slot < 0) continue;
                    const int view_src = facts(slot).view_src;
                    const bool placed = backend_of_[static_cast<size_t>(slot)].valid() ||
                                        (view_src >= 0 && backend_of_[static_cast<size_t>(view_src)].valid());
                    if (placed && buffer_supported(slot, b)) ++count;
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
            if (buft_at(b) != buft_at(cur) || !computes(n, *node, b)) continue;
            bool all_sources = true;
            for (int j = 0; j < facts(n).n_src && all_sources; ++j) {
                const int slot = src_slot(n, j);
                if (slot >= 0 && !buffer_supported(slot, b)) all_sources = false;
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
        const int node_view_src = facts(n).view_src;
        if (node_view_src >= 0 && !node_backend(n).valid()) {
            assign_slot(n, backend_of_[static_cast<size_t>(node_view_src)], AssignReason::FromView);
        }
        for (int j = 0; j < facts(n).n_src; ++j) {
            const int slot = src_slot(n, j);
            if (slot < 0 || backend_of_[static_cast<size_t>(slot)].valid()) continue;
            const int view_src = facts(slot).view_src;
            if (view_src >= 0) {
                assign_slot(slot, backend_of_[static_cast<size_t>(view_src)], AssignReason::FromView);
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
        XB_ASSIGN_OR_RETURN(const BackendId b, backend_from_current(*t, slot, why));
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
        if (!facts(i).view_op && !node_backend(i).valid()) {
            return Status(StatusCode::NotSupported, "scheduler: no backend supports '" + node->display_name() + "' (" +
                                                        node->op_label() + ")");
        }
    }
    return Status::ok();
}

}  // namespace xb
