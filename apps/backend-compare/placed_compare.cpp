#include "placed_compare.hpp"

#include "session.hpp"

namespace xb::tools {

Result<PlacedRun> compare_placed(const CommonOptions& options, Backend& ref, const config::Model& reference,
                                 const Tolerances& tol, bool stop_at_first, CompareReport& out) {
    CommonOptions placed = options;
    placed.backends.clear();  // the config's own backends (after --map)
    XB_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, open_session(placed));
    Session& s = *session;
    XB_RETURN_IF_ERROR(check_fault_devices(s.faults, s.backend_names(), "the placement (" + join_list(s.backend_names()) + ")"));
    // The placed run's sources may already be overwritten (its allocator reuses memory), so the
    // origin comes from the sources' recorded errors, and the inputs' errors are not told.
    LiveJudge judge(reference.graph, tol, {.stop_at_first = stop_at_first, .inputs_readable = false}, out);
    XB_RETURN_IF_ERROR(compare_graph_scheduled(ref, reference.graph, *s.sched, s.model.graph, [&](const NodeComparison& n) {
        const bool go_on = judge(n);
        if (const Backend* b = s.sched->tensor_backend(*n.t2); b != nullptr) out.set_device(n.index, std::string(b->name()));
        return go_on;
    }));
    XB_RETURN_IF_ERROR(judge.status());
    return PlacedRun{join_list(s.backend_names()), s.faults, judge.stopped()};
}

}  // namespace xb::tools
