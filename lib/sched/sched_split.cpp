// The scheduler's pass 5: cut the graph into splits, give split inputs copies on the split's
// backend, and build the graph the allocator places (see scheduler.hpp).
#include <string>

#include "backend/tensor_io.hpp"
#include "sched/scheduler.hpp"

namespace xb {

void Scheduler::add_slot(const Tensor* t) {
    tensors_.push_back(t);
    backend_of_.push_back(BackendId::none());
    reason_of_.push_back(AssignReason::None);
    op_support_.push_back(0);
    facts_.push_back(facts_of(*t));
    copies_.resize(tensors_.size() * static_cast<size_t>(n_backends() * options_.n_copies), nullptr);
    const int slot = static_cast<int>(tensors_.size()) - 1;
    if (t->view_src != nullptr) {
        const int view_src = slot_of(t->view_src);  // may add its slot (and grow facts_)
        facts_[static_cast<size_t>(slot)].view_src = view_src;
    }
    apply_user_assignment(slot);
}

void Scheduler::apply_user_assignment(int slot) {
    const BackendId user(user_assignments_.find(tensors_[static_cast<size_t>(slot)]));  // none when unassigned
    if (user.valid()) assign_slot(slot, user, AssignReason::User);
}

int Scheduler::outside_slot(const Tensor* t) {
    const auto [slot, inserted] = outside_slots_.insert(t, static_cast<int32_t>(tensors_.size()));
    if (inserted) add_slot(t);
    return slot;
}

int Scheduler::find_slot(const Tensor* t) const {
    if (current_graph_ == nullptr || tensors_.empty()) return -1;
    const GraphRef r = current_graph_->ref_of(t);
    if (r.in_graph()) return static_cast<int>(r.dense(*current_graph_));
    return outside_slots_.find(t);
}

void Scheduler::assign_slot(int slot, BackendId backend, AssignReason why) {
    backend_of_[static_cast<size_t>(slot)] = backend;
    reason_of_[static_cast<size_t>(slot)] = why;
}

Tensor*& Scheduler::copy_of(int slot, BackendId backend, int copy) {
    const size_t per_tensor = static_cast<size_t>(n_backends() * options_.n_copies);
    return copies_[static_cast<size_t>(slot) * per_tensor + backend.index() * static_cast<size_t>(options_.n_copies) +
                   static_cast<size_t>(copy)];
}

Tensor* Scheduler::make_copy(const Tensor& src, BackendId backend, int copy) {
    Tensor* t = copy_ctx_->dup_tensor_layout(src);
    t->name = std::string(backend_at(backend).name()) + "#" + src.display_name() + "#" +
              std::to_string(copy);
    if (options_.n_copies > 1) {
        // Each copy must keep its bytes until its turn comes round again.
        t->set_input();
        t->set_output();
    }
    return t;
}

void Scheduler::restore_sources() {
    for (auto it = rewrites_.rbegin(); it != rewrites_.rend(); ++it) it->node->src[it->slot] = it->original;
    rewrites_.clear();
}

// A new split starts where the backend changes, or where a weight of another, incompatible
// backend would have to be copied into a split that already has inputs (starting over lets the
// memory of earlier copies be reused).
bool Scheduler::needs_new_split(int index, const Split& split, BackendId cur_backend) {
    if (node_backend(index) != cur_backend) return true;
    if (split.inputs.empty()) return false;
    for (int j = 0; j < facts(index).n_src; ++j) {
        const int slot = src_slot(index, j);
        if (slot < 0 || !facts(slot).weight) continue;
        if (backend_of_[static_cast<size_t>(slot)] != cur_backend && !buffer_supported(slot, cur_backend)) return true;
    }
    return false;
}

// User inputs rotate over n_copies copies on their own backend (pipeline parallelism).
void Scheduler::add_graph_input_copies(Tensor& input, BackendId backend) {
    const int id = slot_of(&input);
    if (copy_of(id, backend, 0) != nullptr) return;
    for (int c = 0; c < options_.n_copies; ++c) {
        Tensor* t = c == cur_copy_ ? &input : make_copy(input, backend, c);
        if (t == &input) {
            input.set_input();
            input.set_output();
        }
        copy_of(id, backend, c) = t;
    }
    graph_inputs_.push_back(&input);
}

// Source j of node (in `slot`) lives where the split's backend cannot read it: copy it into the
// split (once per split) and point the node at the copy.
void Scheduler::add_split_input(Tensor& node, int j, int slot, Split& split) {
    Tensor* src = node.src[j];
    if (copy_of(slot, split.backend, 0) == nullptr) {
        for (int c = 0; c < options_.n_copies; ++c) copy_of(slot, split.backend, c) = make_copy(*src, split.backend, c);
        split.inputs.push_back(src);
    }
    rewrites_.push_back({&node, j, src});
    node.src[j] = copy_of(slot, split.backend, cur_copy_);
}

void Scheduler::cut_splits(const Graph& graph) {
    // The splits of the last call are reused in place: their vectors keep their storage.
    size_t used = 0;
    auto start_split = [&](BackendId backend, int begin) {
        if (used == splits_.size()) splits_.emplace_back();
        Split& s = splits_[used++];
        s.backend = backend;
        s.begin = begin;
        s.end = 0;
        s.inputs.clear();
        s.graph.clear();
    };
    const int n = graph.n_nodes();
    int i = 0;
    while (i < n && facts(i).view_op) ++i;
    if (i == n) {
        start_split(cpu_id(), 0);
        splits_[0].end = n;
        splits_.resize(used);
        return;
    }
    start_split(node_backend(i), 0);
    for (; i < n; ++i) {
        if (facts(i).view_op) continue;
        if (needs_new_split(i, splits_[used - 1], splits_[used - 1].backend)) {
            splits_[used - 1].end = i;
            start_split(node_backend(i), i);
        }
        Split& split = splits_[used - 1];
        Tensor& node = *graph.nodes()[static_cast<size_t>(i)];  // read only to copy an input
        for (int j = 0; j < facts(i).n_src; ++j) {
            const int slot = src_slot(i, j);
            if (slot < 0) continue;
            const BackendId src_backend = backend_of_[static_cast<size_t>(slot)];
            if (facts(slot).input && options_.n_copies > 1) add_graph_input_copies(*node.src[j], src_backend);
            if (src_backend != split.backend && !buffer_supported(slot, split.backend)) add_split_input(node, j, slot, split);
        }
    }
    splits_[used - 1].end = n;
    splits_.resize(used);
    for (Split& s : splits_) graph.view_into(s.begin, s.end, s.graph);
}

// The allocator's graph: before each split, a dependency on each input (so that the source lives
// until the copy) and the input's copy (so that it is allocated at the split's start); then the
// split's nodes. With n_copies > 1 every rotating copy is a leaf, so each gets its own memory.
void Scheduler::build_alloc_graph(const Graph& graph) {
    alloc_graph_.clear();
    alloc_node_ids_.clear();
    alloc_leaf_ids_.clear();
    for (const Split& split : splits_) {
        for (Tensor* input : split.inputs) {
            const int id = slot_of(input);
            Tensor* dep = copy_ctx_->new_view(*input, input->ne, input->nb, 0);
            dep->src[0] = input;
            dep->name = "dep#" + input->display_name();
            alloc_graph_.add_node(dep);
            alloc_node_ids_.push_back(backend_of_[static_cast<size_t>(id)].value());
            alloc_graph_.add_node(copy_of(id, split.backend, cur_copy_));
            alloc_node_ids_.push_back(split.backend.value());
        }
        for (int i = split.begin; i < split.end; ++i) {
            alloc_graph_.add_node(graph.nodes()[static_cast<size_t>(i)]);
            alloc_node_ids_.push_back(node_backend(i).value());
        }
    }
    auto add_leaf = [&](Tensor* t, BackendId backend) {
        const size_t before = static_cast<size_t>(alloc_graph_.n_leafs());
        alloc_graph_.add_leaf(t);
        if (static_cast<size_t>(alloc_graph_.n_leafs()) > before) alloc_leaf_ids_.push_back(backend.value());
    };
    if (options_.n_copies > 1) {
        for (Tensor* input : graph_inputs_) {
            const int id = slot_of(input);
            const BackendId b = backend_of_[static_cast<size_t>(id)];
            for (int c = 0; c < options_.n_copies; ++c) add_leaf(copy_of(id, b, c), b);
        }
        for (const Split& split : splits_) {
            for (Tensor* input : split.inputs) {
                for (int c = 0; c < options_.n_copies; ++c) add_leaf(copy_of(slot_of(input), split.backend, c), split.backend);
            }
        }
    }
    for (Tensor* leaf : graph.leafs()) {
        const BackendId b = backend_of(leaf);
        add_leaf(leaf, b.valid() ? b : cpu_id());
    }
}

Status Scheduler::split_graph(Graph& graph) {
    restore_sources();
    outside_slots_.clear();
    graph_inputs_.clear();
    copy_ctx_ = std::make_unique<Context>();
    current_graph_ = &graph;

    // The graph's tensors take slots in their dense order: node i is slot i, so passes that walk
    // the nodes index their state directly.
    tensors_.assign(graph.nodes().begin(), graph.nodes().end());
    tensors_.insert(tensors_.end(), graph.leafs().begin(), graph.leafs().end());
    backend_of_.assign(tensors_.size(), BackendId::none());
    reason_of_.assign(tensors_.size(), AssignReason::None);
    op_support_.assign(tensors_.size(), 0);
    buft_readers_.clear();  // buffer types may have come and gone since the last split
    facts_.clear();
    for (const Tensor* t : tensors_) facts_.push_back(facts_of(*t));
    copies_.assign(tensors_.size() * static_cast<size_t>(n_backends() * options_.n_copies), nullptr);
    if (user_assignments_.size() > 0) {
        for (int slot = 0; slot < static_cast<int>(tensors_.size()); ++slot) apply_user_assignment(slot);
    }
    // Sources by the refs the graph recorded as it was built (no lookups), else one by one.
    src_slots_.assign(graph.nodes().size() * kMaxSrc, -1);
    const bool by_ref = graph.has_src_refs();
    for (int i = 0; i < graph.n_nodes(); ++i) {
        const Tensor& node = *graph.nodes()[static_cast<size_t>(i)];
        int32_t* slots = &src_slots_[static_cast<size_t>(i) * kMaxSrc];
        int n_src = 0;
        for (int j = 0; j < kMaxSrc; ++j) {
            const GraphRef r = by_ref ? graph.src_refs(i)[static_cast<size_t>(j)] : graph.ref_of(node.src[j]);
            if (r.kind() == GraphRef::Kind::Absent) continue;
            slots[j] = r.in_graph() ? static_cast<int32_t>(r.dense(graph)) : outside_slot(node.src[j]);
            n_src = j + 1;
        }
        facts_[static_cast<size_t>(i)].n_src = static_cast<int8_t>(n_src);
        if (node.view_src != nullptr) facts_[static_cast<size_t>(i)].view_src = slot_of(node.view_src);
    }
    for (int i = 0; i < graph.n_leafs(); ++i) {
        const Tensor& leaf = *graph.leafs()[static_cast<size_t>(i)];
        if (leaf.view_src != nullptr) facts_[static_cast<size_t>(graph.n_nodes() + i)].view_src = slot_of(leaf.view_src);
    }
    XB_RETURN_IF_ERROR(assign_backends(graph));
    cut_splits(graph);
    build_alloc_graph(graph);
    report_stale_ = true;
    if (options_.debug > 0) report().print(stderr, options_.debug);
    return Status::ok();
}

}  // namespace xb
