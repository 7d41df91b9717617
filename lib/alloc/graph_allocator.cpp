#include "alloc/graph_allocator.hpp"

#include <deque>
#include <string>

#include "alloc/allocation_checker.hpp"
#include "backend/tensor_io.hpp"

namespace xb {

namespace {

// Per-tensor bookkeeping of one planning pass.
struct TensorState {
    int n_children = 0;  // consumers not computed yet
    int n_views = 0;     // views (graph nodes) not dead yet
    int planner = -1;
    size_t offset = 0;
    bool placed = false;       // allocate() has seen it
    bool owns_memory = false;  // holds a block of the plan that must be freed when it dies
    bool pinned = false;       // a leaf, or the storage of an input or output view
};

// Memory that must survive the whole graph: what the user sets before and reads after compute.
bool is_protected(const Tensor& t, const TensorState& s) {
    return s.pinned || t.is_input() || t.is_output() ||
           (t.is_view() && (t.view_src->is_input() || t.view_src->is_output()));
}

}  // namespace

// One planning pass over a graph: the ggml-alloc walk with xbackend's input protection.
class GraphAllocator::Planner {
public:
    Planner(GraphAllocator& owner, const Graph& graph)
        : owner_(owner), graph_(graph), states_(graph.n_tensors()) {
        for (Tensor* leaf : graph.leafs()) state(leaf).pinned = true;
    }

    void run(std::span<const int> node_ids, std::span<const int> leaf_ids) {
        for (size_t i = 0; i < graph_.leafs().size(); ++i) allocate(*graph_.leafs()[i], owner_.planner_of(leaf_ids, i));
        count_uses_and_place_inputs(node_ids);
        for (size_t i = 0; i < graph_.nodes().size(); ++i) {
            Tensor& node = *graph_.nodes()[i];
            const int planner = owner_.planner_of(node_ids, i);
            for (Tensor* src : node.src) {
                if (src != nullptr) allocate(*src, planner);
            }
            allocate(node, planner);
            for (Tensor* src : node.src) {
                if (src != nullptr) release_use(*src);
            }
        }
    }

    Placement placement(const Tensor* t) {
        if (t == nullptr || owner_.is_preallocated(*t) || t->is_view()) return {};
        const TensorState& s = state(t);
        return {s.planner, s.offset, owner_.planner_bufts_[static_cast<size_t>(s.planner)]->alloc_size(*t)};
    }

private:
    void count_uses_and_place_inputs(std::span<const int> node_ids) {
        for (size_t i = 0; i < graph_.nodes().size(); ++i) {
            Tensor& node = *graph_.nodes()[i];
            if (node.is_view() && node.op != Op::None) {
                TensorState& root = state(node.view_src);
                root.n_views += 1;
                // The user reads (or sets) the storage through this view: it must survive the graph.
                if (node.is_output() || node.is_input()) root.pinned = true;
            }
            const int planner = owner_.planner_of(node_ids, i);
            // Inputs get memory first, so that nothing computed earlier can take it.
            if (node.is_input()) allocate(node, planner);
            for (Tensor* src : node.src) {
                if (src == nullptr) continue;
                state(src).n_children += 1;
                if (src->is_input()) allocate(*src, planner);
            }
        }
    }

    void allocate(Tensor& t, int planner) {
        if (t.is_view() || owner_.is_preallocated(t)) return;
        TensorState& s = state(&t);
        if (s.placed) return;
        s.placed = true;
        if (try_inplace(t, s, planner)) return;
        FreeBlockAllocator& alloc = owner_.planners_[static_cast<size_t>(planner)];
        s.planner = planner;
        s.offset = alloc.alloc(owner_.planner_bufts_[static_cast<size_t>(planner)]->alloc_size(t));
        s.owns_memory = true;
    }

    // Takes over the memory of a parent that dies here; see the class comment for the rules.
    bool try_inplace(Tensor& node, TensorState& s, int planner) {
        for (int j = 0; j < op_inplace_sources(node.op); ++j) {
            Tensor* parent = node.src[j];
            if (parent == nullptr || !same_layout(node, *parent)) continue;
            TensorState& ps = state(parent);
            if (is_protected(*parent, ps)) continue;
            if (ps.planner != planner && !(parent->view_src && state(parent->view_src).planner == planner)) continue;
            if (ps.n_children != 1 || ps.n_views != 0) continue;
            if (!parent->is_view()) {
                if (!ps.owns_memory) continue;
                take_over(s, ps);
                return true;
            }
            // A view parent: reuse its root when this view is the root's only remaining use.
            TensorState& root = state(parent->view_src);
            if (root.owns_memory && root.n_views == 1 && root.n_children == 0 && parent->view_offs == 0 &&
                !is_protected(*parent->view_src, root) &&
                owner_.planner_bufts_[static_cast<size_t>(root.planner)]->alloc_size(node) <=
                    owner_.planner_bufts_[static_cast<size_t>(root.planner)]->alloc_size(*parent->view_src)) {
                take_over(s, root);
                return true;
            }
        }
        return false;
    }

    static void take_over(TensorState& s, TensorState& donor) {
        s.planner = donor.planner;
        s.offset = donor.offset;
        s.owns_memory = true;
        donor.owns_memory = false;  // the block now belongs to the node: the donor must not free it
    }

    // One consumer of `src` is done: free its memory (or its view root's) once nothing needs it.
    void release_use(Tensor& src) {
        TensorState& s = state(&src);
        s.n_children -= 1;
        if (s.n_children != 0 || s.n_views != 0) return;
        if (src.is_view()) {
            TensorState& root = state(src.view_src);
            root.n_views -= 1;
            if (root.n_views == 0 && root.n_children == 0) free_memory(*src.view_src, root);
        } else {
            free_memory(src, s);
        }
    }

    void free_memory(Tensor& t, TensorState& s) {
        if (!s.owns_memory || is_protected(t, s)) return;
        owner_.planners_[static_cast<size_t>(s.planner)].free(
            s.offset, owner_.planner_bufts_[static_cast<size_t>(s.planner)]->alloc_size(t));
        s.owns_memory = false;
    }

    // The state of t: graph tensors by their dense index; others (view sources held outside the
    // graph, e.g. a preallocated cache that set_rows writes) in the order first met.
    TensorState& state(const Tensor* t) {
        const GraphRef r = graph_.ref_of(t);
        if (r.in_graph()) return states_[r.dense(graph_)];
        const auto [id, inserted] = outside_ids_.insert(t, static_cast<int32_t>(outside_states_.size()));
        if (inserted) outside_states_.emplace_back();
        return outside_states_[static_cast<size_t>(id)];
    }

    GraphAllocator& owner_;
    const Graph& graph_;
    std::vector<TensorState> states_;
    PointerMap outside_ids_;
    std::deque<TensorState> outside_states_;  // a deque: references stay valid as it grows
};

GraphAllocator::GraphAllocator(std::vector<BufferType*> bufts) : bufts_(std::move(bufts)) {
    XB_CHECK_MSG(!bufts_.empty(), "a graph allocator needs at least one buffer type");
    for (BufferType* buft : bufts_) {
        XB_CHECK(buft != nullptr);
        int planner = -1;
        for (size_t k = 0; k < planner_bufts_.size(); ++k) {
            if (planner_bufts_[k] == buft) planner = static_cast<int>(k);
        }
        if (planner < 0) {
            planner = static_cast<int>(planner_bufts_.size());
            planner_bufts_.push_back(buft);
            planners_.emplace_back(buft->alignment());
            buffers_.emplace_back();
        }
        allocator_of_.push_back(planner);
    }
}

GraphAllocator::~GraphAllocator() = default;

bool GraphAllocator::owns(const Tensor& t) const {
    const Buffer* b = t.view_src ? t.view_src->buffer : t.buffer;
    if (b == nullptr) return false;
    for (const auto& own : buffers_) {
        if (own.get() == b) return true;
    }
    return false;
}

size_t GraphAllocator::buffer_size(int i) const {
    XB_CHECK(i >= 0 && i < n_buffers());
    const int planner = allocator_of_[static_cast<size_t>(i)];
    for (int j = 0; j < i; ++j) {
        if (allocator_of_[static_cast<size_t>(j)] == planner) return 0;  // counted at its first index
    }
    const Buffer* b = buffers_[static_cast<size_t>(planner)].get();
    return b ? b->size() : 0;
}

Status GraphAllocator::check_buffer_ids(const Graph& graph, std::span<const int> node_ids,
                                        std::span<const int> leaf_ids) const {
    auto check = [&](std::span<const int> ids, size_t n, const char* what) -> Status {
        if (!ids.empty() && ids.size() != n) {
            return Status(StatusCode::InvalidArgument, std::string("graph allocator: ") + what + " buffer ids: got " +
                                                           std::to_string(ids.size()) + ", the graph has " + std::to_string(n));
        }
        for (int id : ids) {
            if (id < 0 || id >= n_buffers()) {
                return Status(StatusCode::InvalidArgument, std::string("graph allocator: ") + what + " buffer id " +
                                                               std::to_string(id) + " is not in [0, " +
                                                               std::to_string(n_buffers()) + ")");
            }
        }
        return Status::ok();
    };
    XB_RETURN_IF_ERROR(check(node_ids, graph.nodes().size(), "node"));
    return check(leaf_ids, graph.leafs().size(), "leaf");
}

Status GraphAllocator::reserve(const Graph& graph, std::span<const int> node_buffer_ids,
                               std::span<const int> leaf_buffer_ids) {
    XB_RETURN_IF_ERROR(check_buffer_ids(graph, node_buffer_ids, leaf_buffer_ids));
    for (FreeBlockAllocator& p : planners_) p.reset();
    Planner planner(*this, graph);
    planner.run(node_buffer_ids, leaf_buffer_ids);
    record_plan(graph, planner);
    return allocate_buffers();
}

void GraphAllocator::record_plan(const Graph& graph, Planner& planner) {
    node_plans_.assign(graph.nodes().size(), NodePlan{});
    outside_src_plans_.clear();
    for (size_t i = 0; i < graph.nodes().size(); ++i) {
        const Tensor* node = graph.nodes()[i];
        NodePlan& plan = node_plans_[i];
        plan.dst = planner.placement(node);
        for (int j = 0; j < kMaxSrc; ++j) {
            const GraphRef ref = graph.ref_of(node->src[j]);
            plan.src_ref[static_cast<size_t>(j)] = ref;
            if (ref.kind() == GraphRef::Kind::Outside) outside_src_plans_.push_back(planner.placement(node->src[j]));
        }
        plan.view_ref = graph.ref_of(node->view_src);
        plan.flags = node->flags;
    }
    leaf_plans_.clear();
    for (const Tensor* leaf : graph.leafs()) leaf_plans_.push_back(planner.placement(leaf));
}

Status GraphAllocator::allocate_buffers() {
    for (size_t k = 0; k < planners_.size(); ++k) {
        const size_t need = planners_[k].peak();
        std::unique_ptr<Buffer>& buffer = buffers_[k];
        if (buffer != nullptr && buffer->size() >= need) continue;
        buffer.reset();  // release the old memory before asking for more
        const Status fits = check_buffer_type_memory(*planner_bufts_[k], need, "the compute buffers");
        auto fresh = fits.is_ok() ? planner_bufts_[k]->alloc_buffer(need) : Result<std::unique_ptr<Buffer>>(fits);
        if (!fresh.is_ok()) {
            return Status(fresh.status().code(), std::string("graph allocator: cannot allocate the ") +
                                                     planner_bufts_[k]->name() + " compute buffer of " +
                                                     std::to_string(need) + " bytes: " + fresh.status().message());
        }
        buffer = std::move(fresh).value();
        buffer->set_usage(BufferUsage::Compute);
    }
    return Status::ok();
}

bool GraphAllocator::placement_fits(const Tensor* t, const Placement& p) const {
    if (t == nullptr || t->is_view() || is_preallocated(*t)) return true;
    if (p.planner < 0) return false;  // it needs memory now but had none in the plan
    return planner_bufts_[static_cast<size_t>(p.planner)]->alloc_size(*t) <= p.size_max;
}

bool GraphAllocator::needs_replan(const Graph& graph) const {
    if (node_plans_.size() != graph.nodes().size() || leaf_plans_.size() != graph.leafs().size()) return true;
    auto same_ref = [&](const Tensor* t, GraphRef ref) {
        switch (ref.kind()) {
            case GraphRef::Kind::Absent: return t == nullptr;
            // Not planned by this allocator, so which tensor it is does not change the plan.
            case GraphRef::Kind::Outside: return t != nullptr;
            case GraphRef::Kind::Node: return graph.nodes()[static_cast<size_t>(ref.index())] == t;
            case GraphRef::Kind::Leaf: return graph.leafs()[static_cast<size_t>(ref.index())] == t;
        }
        return false;
    };
    size_t outside = 0;  // the next entry of outside_src_plans_
    for (size_t i = 0; i < graph.nodes().size(); ++i) {
        const Tensor* node = graph.nodes()[i];
        const NodePlan& plan = node_plans_[i];
        if (plan.flags != node->flags || !same_ref(node->view_src, plan.view_ref) || !placement_fits(node, plan.dst)) {
            return true;
        }
        // A source in the graph is checked at its own node or leaf entry (its plan is the same
        // wherever it is read); only one outside the graph has its placement checked here.
        for (size_t j = 0; j < kMaxSrc; ++j) {
            if (!same_ref(node->src[j], plan.src_ref[j])) return true;
            if (plan.src_ref[j].kind() == GraphRef::Kind::Outside &&
                !placement_fits(node->src[j], outside_src_plans_[outside++])) {
                return true;
            }
        }
    }
    for (size_t i = 0; i < graph.leafs().size(); ++i) {
        if (!placement_fits(graph.leafs()[i], leaf_plans_[i])) return true;
    }
    return false;
}

void GraphAllocator::Addresses::record(const Tensor& t) {
    const auto [i, inserted] = index_.insert(&t, static_cast<int32_t>(entries_.size()));
    if (inserted) {
        entries_.emplace_back(t.buffer, t.data);
        tensors_.push_back(&t);
    } else {
        entries_[static_cast<size_t>(i)] = {t.buffer, t.data};
    }
}

bool GraphAllocator::Addresses::still_has(const Tensor& t) const {
    const int32_t i = index_.find(&t);
    if (i == PointerMap::kMissing) return false;
    const auto& [buffer, data] = entries_[static_cast<size_t>(i)];
    return buffer == t.buffer && data == t.data;
}

void GraphAllocator::Addresses::add_missing(const Addresses& older) {
    for (size_t i = 0; i < older.tensors_.size(); ++i) {
        const auto [j, inserted] = index_.insert(older.tensors_[i], static_cast<int32_t>(entries_.size()));
        if (!inserted) continue;
        entries_.push_back(older.entries_[i]);
        tensors_.push_back(older.tensors_[i]);
    }
}

void GraphAllocator::Addresses::clear() {
    index_.clear();
    entries_.clear();
    tensors_.clear();
}

bool GraphAllocator::placed_last_time(const Tensor& t) const { return placed_.still_has(t); }

Status GraphAllocator::place(Tensor& t, const Placement& p) {
    if (t.is_view()) {
        // Views follow their source, which may have moved since the last placement.
        return t.view_src->data != nullptr ? view_init(t) : Status::ok();
    }
    if (p.planner < 0 || is_preallocated(t)) return Status::ok();
    Buffer& buffer = *buffers_[static_cast<size_t>(p.planner)];
    XB_CHECK_MSG(p.offset + p.size_max <= buffer.size(), "a planned tensor lies outside its buffer");
    t.buffer = &buffer;
    t.data = static_cast<std::byte*>(buffer.base()) + p.offset;
    placing_.record(t);
    return buffer.init_tensor(t);
}

Status GraphAllocator::place_all(const Graph& graph) {
    for (size_t i = 0; i < graph.leafs().size(); ++i) XB_RETURN_IF_ERROR(place(*graph.leafs()[i], leaf_plans_[i]));
    size_t outside = 0;  // the next entry of outside_src_plans_ (needs_replan matched the kinds)
    for (size_t i = 0; i < graph.nodes().size(); ++i) {
        Tensor& node = *graph.nodes()[i];
        const NodePlan& plan = node_plans_[i];
        // Leafs and earlier nodes are placed already (the order is topological): only sources
        // outside the graph are placed as they are met.
        for (size_t j = 0; j < kMaxSrc; ++j) {
            if (plan.src_ref[j].kind() == GraphRef::Kind::Outside) XB_RETURN_IF_ERROR(place(*node.src[j], outside_src_plans_[outside++]));
        }
        XB_RETURN_IF_ERROR(place(node, plan.dst));
    }
    return Status::ok();
}

Status GraphAllocator::alloc_graph(const Graph& graph) {
    last_alloc_replanned_ = needs_replan(graph);
    if (last_alloc_replanned_) {
        if (planners_.size() != 1) {
            return Status(StatusCode::InvalidArgument,
                          "graph allocator: the graph changed and it uses several buffer types: call reserve with "
                          "its buffer assignment first");
        }
        XB_RETURN_IF_ERROR(reserve(graph));
    }
    for (const auto& buffer : buffers_) {
        if (buffer) buffer->reset();
    }
    placing_.clear();
    const Status placed = place_all(graph);
    // After a failure, tensors not reached keep their earlier addresses: remember both.
    if (!placed.is_ok()) placing_.add_missing(placed_);
    std::swap(placed_, placing_);
    XB_RETURN_IF_ERROR(placed);
#ifndef NDEBUG
    // Debug builds prove every placement safe (tests do it in all builds).
    const Status check = check_graph_allocation(graph);
    XB_CHECK_MSG(check.is_ok(), check.message().c_str());
#endif
    return Status::ok();
}

}  // namespace xb

