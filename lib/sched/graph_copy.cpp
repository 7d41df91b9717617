#include "sched/graph_copy.hpp"

#include <optional>
#include <unordered_set>
#include <vector>

#include "alloc/context_alloc.hpp"
#include "backend/buffer.hpp"
#include "backend/tensor_io.hpp"
#include "core/pointer_map.hpp"

namespace xb {

namespace {

// The tensor that holds t's bytes: t, or the end of its view chain.
const Tensor& storage_of(const Tensor& t) {
    const Tensor* s = &t;
    while (s->view_src != nullptr) s = s->view_src;
    return *s;
}

// The leafs a copy may share with the original (GraphCopyOptions::share_read_only_leafs): those
// that `backend` can read where they are and that no node writes into (a node that computes into
// a view writes its storage: set_rows into a KV cache).
std::unordered_set<const Tensor*> shareable_leafs(const Graph& graph, const Backend& backend) {
    std::unordered_set<const Tensor*> written;
    for (const Tensor* node : graph.nodes()) {
        if (!op_is_view(node->op)) written.insert(&storage_of(*node));
    }
    std::unordered_set<const Tensor*> shared;
    for (const Tensor* leaf : graph.leafs()) {
        const Tensor& storage = storage_of(*leaf);
        const Buffer* buffer = storage_buffer(storage);
        if (buffer != nullptr && !written.contains(&storage) && backend.supports_buft(buffer->type())) shared.insert(leaf);
    }
    return shared;
}

// Maps original tensors to their copies, making copies of sources and view sources first.
class Copier {
public:
    Copier(GraphCopy& out, std::unordered_set<const Tensor*> shared) : out_(out), shared_(std::move(shared)) {}

    Result<Tensor*> copy(const Tensor& t) {
        if (const int32_t id = map_.find(&t); id != PointerMap::kMissing) return copies_[static_cast<size_t>(id)];
        if (t.data == nullptr) {
            return Status(StatusCode::InvalidArgument, "graph_copy: '" + t.display_name() + "' is not allocated");
        }
        // A graph holds its tensors by mutable pointer; a shared leaf is only ever read.
        if (shared_.contains(&t)) return remember(t, const_cast<Tensor*>(&t));
        Context& ctx = t.is_view() ? *out_.unallocated : *out_.allocated;
        Tensor* dst = ctx.dup_tensor_layout(t);
        if (t.is_view()) {
            XB_ASSIGN_OR_RETURN(dst->view_src, copy(*t.view_src));
            dst->view_offs = t.view_offs;
        }
        dst->op = t.op;
        dst->op_params = t.op_params;
        dst->flags = t.flags;
        dst->name = t.name;
        for (int j = 0; j < kMaxSrc; ++j) {
            if (t.src[j] != nullptr) {
                XB_ASSIGN_OR_RETURN(dst->src[j], copy(*t.src[j]));
            }
        }
        return remember(t, dst);
    }

    // Views point into their sources' new memory; everything else gets the original's bytes.
    Status init_data() {
        for (size_t i = 0; i < copies_.size(); ++i) {
            if (copies_[i] != originals_[i] && !copies_[i]->is_view()) {
                XB_RETURN_IF_ERROR(tensor_copy(*originals_[i], *copies_[i]));
            }
        }
        for (size_t i = 0; i < copies_.size(); ++i) {
            if (copies_[i] != originals_[i] && copies_[i]->is_view()) XB_RETURN_IF_ERROR(view_init(*copies_[i]));
        }
        return Status::ok();
    }

    Tensor* copy_of(const Tensor* t) const { return copies_[static_cast<size_t>(map_.find(t))]; }

private:
    Tensor* remember(const Tensor& original, Tensor* copy) {
        map_.insert(&original, static_cast<int32_t>(copies_.size()));
        originals_.push_back(&original);
        copies_.push_back(copy);
        return copy;
    }

    GraphCopy& out_;
    std::unordered_set<const Tensor*> shared_;
    PointerMap map_;
    std::vector<const Tensor*> originals_;
    std::vector<Tensor*> copies_;
};

// Node i computed on the copy's backend from the reference's current inputs, in a copy of the
// graph of its own (made at the first use), so that a propagated run stays as it was.
class Recompute {
public:
    Recompute(Backend& backend, const Graph& reference) : backend_(backend), reference_(reference) {}

    Result<const Tensor*> node(int i) {
        const Tensor& want = *reference_.node(i);
        if (!copy_) {
            // Made now, the copy already holds every tensor as the reference has it.
            XB_ASSIGN_OR_RETURN(GraphCopy copy, graph_copy(backend_, reference_, {.share_read_only_leafs = true}));
            copy_.emplace(std::move(copy));
        } else {
            // The reference's inputs, through the memory they view; leafs too, since a graph may
            // write into one (a KV cache).
            for (const Tensor* src : want.src) {
                if (src == nullptr) continue;
                const Tensor& storage = src->view_src != nullptr ? *src->view_src : *src;  // a view's is its source's
                const GraphRef r = reference_.ref_of(&storage);
                if (!r.in_graph()) continue;
                Tensor& mine = *(r.is_node() ? copy_->graph.nodes() : copy_->graph.leafs())[static_cast<size_t>(r.index())];
                if (&mine != &storage) XB_RETURN_IF_ERROR(tensor_copy(storage, mine));
            }
        }
        XB_RETURN_IF_ERROR(backend_.graph_compute(copy_->graph.view(i, i + 1)));
        return static_cast<const Tensor*>(copy_->graph.node(i));
    }

private:
    Backend& backend_;
    const Graph& reference_;
    std::optional<GraphCopy> copy_;
};

}  // namespace

Result<GraphCopy> graph_copy(Backend& backend, const Graph& graph, const GraphCopyOptions& options) {
    GraphCopy out;
    out.allocated = std::make_unique<Context>();
    out.unallocated = std::make_unique<Context>();
    Copier copier(out, options.share_read_only_leafs ? shareable_leafs(graph, backend) : std::unordered_set<const Tensor*>{});
    for (const Tensor* leaf : graph.leafs()) XB_RETURN_IF_ERROR(copier.copy(*leaf).status());
    for (const Tensor* node : graph.nodes()) XB_RETURN_IF_ERROR(copier.copy(*node).status());
    XB_ASSIGN_OR_RETURN(out.buffer, alloc_ctx_tensors(*out.allocated, backend));
    XB_RETURN_IF_ERROR(copier.init_data());
    for (const Tensor* node : graph.nodes()) out.graph.add_node(copier.copy_of(node));
    for (const Tensor* leaf : graph.leafs()) out.graph.add_leaf(copier.copy_of(leaf));
    return out;
}

Status compare_graph_backend(Backend& backend1, Backend& backend2, const Graph& graph, const CompareCallback& callback) {
    return compare_graph_backend(backend1, backend2, graph, {},
                                 [&](const NodeComparison& n) { return callback(n.index, *n.t1, *n.t2); });
}

Status compare_graph_backend(Backend& backend1, Backend& backend2, const Graph& graph, const CompareOptions& options,
                             const NodeCallback& callback) {
    return GraphComparison(backend1, backend2, graph, options).step(callback);
}

struct GraphComparison::Copies {
    GraphCopy target;
    std::optional<GraphCopy> truth;
    Recompute recompute;
};

GraphComparison::GraphComparison(Backend& backend1, Backend& backend2, const Graph& graph, const CompareOptions& options)
    : backend1_(backend1), backend2_(backend2), graph_(graph), options_(options) {}

GraphComparison::~GraphComparison() = default;

namespace {

// The original's inputs into a copy of its graph (a shared leaf is already the original).
Status copy_inputs(const Graph& original, Graph& copy) {
    for (int i = 0; i < original.n_leafs(); ++i) {
        const Tensor& from = *original.leafs()[static_cast<size_t>(i)];
        Tensor& to = *copy.leafs()[static_cast<size_t>(i)];
        if (from.is_input() && &from != &to) XB_RETURN_IF_ERROR(tensor_copy(from, to));
    }
    return Status::ok();
}

}  // namespace

Status GraphComparison::step(const NodeCallback& callback) {
    if (!copies_) {
        XB_ASSIGN_OR_RETURN(GraphCopy target, graph_copy(backend2_, graph_));
        std::optional<GraphCopy> truth;
        if (options_.truth != nullptr) {
            XB_ASSIGN_OR_RETURN(GraphCopy t, graph_copy(*options_.truth, graph_, {.share_read_only_leafs = true}));
            truth.emplace(std::move(t));
        }
        copies_ = std::make_unique<Copies>(Copies{std::move(target), std::move(truth), Recompute(backend2_, graph_)});
    } else {
        XB_RETURN_IF_ERROR(copy_inputs(graph_, copies_->target.graph));
        if (copies_->truth) XB_RETURN_IF_ERROR(copy_inputs(graph_, copies_->truth->graph));
    }
    GraphCopy& copy = copies_->target;
    std::optional<GraphCopy>& truth = copies_->truth;
    Recompute& recompute = copies_->recompute;
    for (int i = 0; i < graph_.n_nodes(); ++i) {
        Tensor& t1 = *graph_.node(i);
        Tensor& t2 = *copy.graph.node(i);
        XB_RETURN_IF_ERROR(backend1_.graph_compute(graph_.view(i, i + 1)));
        if (truth) XB_RETURN_IF_ERROR(options_.truth->graph_compute(truth->graph.view(i, i + 1)));
        if (op_is_view(t1.op)) continue;
        NodeComparison node{.index = i, .t1 = &t1, .t2 = &t2, .truth = truth ? truth->graph.node(i) : nullptr};
        node.supported = !options_.skip_unsupported || backend2_.supports_op(t2);
        if (node.supported) {
            XB_RETURN_IF_ERROR(backend2_.graph_compute(copy.graph.view(i, i + 1)));
            node.recompute_from_reference = [&recompute, i] { return recompute.node(i); };
        } else {
            XB_RETURN_IF_ERROR(tensor_copy(t1, t2));
        }
        if (!callback(node)) break;
        if (options_.isolate && node.supported) XB_RETURN_IF_ERROR(tensor_copy(t1, t2));
    }
    return Status::ok();
}

Status compare_graph_scheduled(Backend& backend1, const Graph& reference, Scheduler& sched, Graph& placed,
                               const NodeCallback& callback) {
    if (reference.n_nodes() != placed.n_nodes()) {
        return Status(StatusCode::InvalidArgument, "compare_graph_scheduled: the placed graph has " +
                                                       std::to_string(placed.n_nodes()) + " nodes, the reference " +
                                                       std::to_string(reference.n_nodes()));
    }
    Status failure;
    bool stopped = false;
    int computed = 0;  // reference nodes [0, computed) are done
    sched.set_eval_callback([&](Tensor& node, bool ask) {
        if (ask) return !op_is_view(node.op);  // views are computed with the next node that is not
        const GraphRef r = placed.ref_of(&node);
        if (!r.is_node()) return true;
        const int i = r.index();
        if (i >= computed) {
            failure = backend1.graph_compute(reference.view(computed, i + 1));
            computed = i + 1;
            if (!failure.is_ok()) return false;
        }
        stopped = !callback(NodeComparison{.index = i, .t1 = reference.node(i), .t2 = &node});
        return !stopped;
    });
    const Status status = sched.graph_compute(placed);
    sched.set_eval_callback(nullptr);
    XB_RETURN_IF_ERROR(failure);
    if (!status.is_ok() && !stopped) return status;
    return Status::ok();
}

}  // namespace xb
