#include "placed_compare.hpp"

#include <unordered_map>

#include "node_checks.hpp"
#include "session.hpp"

namespace xb::tools {

Result<std::string> compare_placed(const CommonOptions& options, const config::Model& reference, const Tolerances& tol,
                                   bool stop_at_first, CompareReport& out) {
    CommonOptions placed = options;
    placed.backends.clear();  // the config's own backends (after --map)
    XB_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, open_session(placed));
    Session& s = *session;
    const Graph& graph = s.model.graph;
    if (graph.n_nodes() != reference.graph.n_nodes()) {
        return Status(StatusCode::Internal, "--placed: the placed graph has " + std::to_string(graph.n_nodes()) +
                                                " nodes, the reference's " + std::to_string(reference.graph.n_nodes()));
    }
    std::unordered_map<const Tensor*, int> index_of;
    for (int i = 0; i < graph.n_nodes(); ++i) index_of[graph.node(i)] = i;
    Divergence divergence(reference.graph);
    Status failure;
    bool stopped = false;
    s.sched->set_eval_callback([&](Tensor& node, bool ask) {
        if (ask) return !op_is_view(node.op);  // views are computed with the next node that is not
        const auto it = index_of.find(&node);
        if (it == index_of.end()) return true;
        const Tensor& want = *reference.graph.node(it->second);
        Result<report::ErrorMetrics> m = metrics_of(node, want);
        if (!m.is_ok()) {
            failure = m.status();
            return false;
        }
        const double tolerance = tol.for_node(want);
        const bool ok = out.add(it->second, want, *m, tolerance);
        divergence.set(it->second, *m, tolerance);
        if (ok) return true;
        // The placed run's sources may already be overwritten (its allocator reuses memory), so
        // the origin comes from the sources' recorded errors, and the inputs' errors are not told.
        const Origin origin = divergence.origin_from_sources(want, *m, tolerance);
        out.explain(origin, {});
        stopped = origin == Origin::Introduced && stop_at_first;
        return !stopped;
    });
    const Status computed = s.sched->graph_compute(s.model.graph);
    s.sched->set_eval_callback(nullptr);
    XB_RETURN_IF_ERROR(failure);
    if (!computed.is_ok() && !stopped) return computed;
    return join_list(s.backend_names());
}

}  // namespace xb::tools
