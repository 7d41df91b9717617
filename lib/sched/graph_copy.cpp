#include "sched/graph_copy.hpp"

#include <vector>

#include "alloc/context_alloc.hpp"
#include "backend/tensor_io.hpp"
#include "core/pointer_map.hpp"

namespace xb {

namespace {

// Maps original tensors to their copies, making copies of sources and view sources first.
class Copier {
public:
    explicit Copier(GraphCopy& out) : out_(out) {}

    Result<Tensor*> copy(const Tensor& t) {
        if (const int32_t id = map_.find(&t); id != PointerMap::kMissing) return copies_[static_cast<size_t>(id)];
        if (t.data == nullptr) {
            return Status(StatusCode::InvalidArgument, "graph_copy: '" + t.display_name() + "' is not allocated");
        }
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
        map_.insert(&t, static_cast<int32_t>(copies_.size()));
        originals_.push_back(&t);
        copies_.push_back(dst);
        return dst;
    }

    // Views point into their sources' new memory; everything else gets the original's bytes.
    Status init_data() {
        for (size_t i = 0; i < copies_.size(); ++i) {
            if (!copies_[i]->is_view()) XB_RETURN_IF_ERROR(tensor_copy(*originals_[i], *copies_[i]));
        }
        for (Tensor* c : copies_) {
            if (c->is_view()) XB_RETURN_IF_ERROR(view_init(*c));
        }
        return Status::ok();
    }

    Tensor* copy_of(const Tensor* t) const { return copies_[static_cast<size_t>(map_.find(t))]; }

private:
    GraphCopy& out_;
    PointerMap map_;
    std::vector<const Tensor*> originals_;
    std::vector<Tensor*> copies_;
};

}  // namespace

Result<GraphCopy> graph_copy(Backend& backend, const Graph& graph) {
    GraphCopy out;
    out.allocated = std::make_unique<Context>();
    out.unallocated = std::make_unique<Context>();
    Copier copier(out);
    for (const Tensor* leaf : graph.leafs()) XB_RETURN_IF_ERROR(copier.copy(*leaf).status());
    for (const Tensor* node : graph.nodes()) XB_RETURN_IF_ERROR(copier.copy(*node).status());
    XB_ASSIGN_OR_RETURN(out.buffer, alloc_ctx_tensors(*out.allocated, backend));
    XB_RETURN_IF_ERROR(copier.init_data());
    for (const Tensor* node : graph.nodes()) out.graph.add_node(copier.copy_of(node));
    for (const Tensor* leaf : graph.leafs()) out.graph.add_leaf(copier.copy_of(leaf));
    return out;
}

Status compare_graph_backend(Backend& backend1, Backend& backend2, const Graph& graph, const CompareCallback& callback) {
    XB_ASSIGN_OR_RETURN(GraphCopy copy, graph_copy(backend2, graph));
    for (int i = 0; i < graph.n_nodes(); ++i) {
        XB_RETURN_IF_ERROR(backend1.graph_compute(graph.view(i, i + 1)));
        XB_RETURN_IF_ERROR(backend2.graph_compute(copy.graph.view(i, i + 1)));
        if (op_is_view(graph.node(i)->op)) continue;
        if (!callback(i, *graph.node(i), *copy.graph.node(i))) break;
    }
    return Status::ok();
}

}  // namespace xb
