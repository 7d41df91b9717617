#include "node_profile.hpp"

#include <algorithm>
#include <chrono>
#include <map>

#include "core/op.hpp"
#include "report/timing.hpp"

namespace xb::tools {

namespace {

using Clock = std::chrono::steady_clock;

// Removes the scheduler's eval callback however profile_nodes returns.
struct CallbackGuard {
    Scheduler& sched;
    ~CallbackGuard() { sched.set_eval_callback(nullptr); }
};

struct OpTotal {
    std::string op;
    int nodes = 0;
    double us = 0;
};

std::vector<OpTotal> op_totals(const NodeProfile& p) {
    std::map<std::string, OpTotal> by_op;
    for (const NodeTime& n : p.nodes) {
        OpTotal& t = by_op[n.op];
        t.op = n.op;
        t.nodes += 1;
        t.us += n.us;
    }
    std::vector<OpTotal> totals;
    for (auto& [op, t] : by_op) totals.push_back(t);
    std::stable_sort(totals.begin(), totals.end(), [](const OpTotal& a, const OpTotal& b) { return a.us > b.us; });
    return totals;
}

double share(double us, double sum) { return sum > 0 ? 100.0 * us / sum : 0.0; }

}  // namespace

double NodeProfile::sum_us() const {
    double sum = 0;
    for (const NodeTime& n : nodes) sum += n.us;
    return sum;
}

Result<NodeProfile> profile_nodes(Session& s, int reps) {
    Graph& graph = s.model.graph;
    std::map<const Tensor*, int> index_of;
    for (int i = 0; i < graph.n_nodes(); ++i) index_of[graph.node(i)] = i;
    std::vector<std::vector<double>> samples(static_cast<size_t>(graph.n_nodes()));
    Clock::time_point started;
    CallbackGuard guard{*s.sched};
    // The scheduler asks about each node (ask) just before computing up to it, and reports it
    // (!ask) once that compute has synchronised: the time between is the node's.
    s.sched->set_eval_callback([&](Tensor& node, bool ask) {
        if (ask) {
            if (computes_nothing(node)) return false;  // computed with the next node that does
            started = Clock::now();
            return true;
        }
        const auto it = index_of.find(&node);
        if (it != index_of.end()) {
            samples[static_cast<size_t>(it->second)].push_back(std::chrono::duration<double, std::micro>(Clock::now() - started).count());
        }
        return true;
    });
    for (int r = 0; r < reps; ++r) {
        XB_RETURN_IF_ERROR(s.model.set_inputs());
        XB_RETURN_IF_ERROR(s.sched->graph_compute(graph));
    }
    NodeProfile p;
    p.reps = reps;
    for (int i = 0; i < graph.n_nodes(); ++i) {
        const std::vector<double>& v = samples[static_cast<size_t>(i)];
        if (v.empty()) continue;
        const Tensor& node = *graph.node(i);
        const Backend* b = s.sched->tensor_backend(node);
        p.nodes.push_back({i, node.display_name(), op_name(node.op), b != nullptr ? std::string(b->name()) : "?",
                           node.shape_string(), dtype_name(node.type), node.nbytes(), report::summarize(v).median});
    }
    return p;
}

report::Table op_table(const NodeProfile& p) {
    const double sum = p.sum_us();
    report::Table t({"op", "nodes", "total_ms", "share_%", "ms_per_node"});
    for (const OpTotal& o : op_totals(p)) {
        t.add_row({o.op, int64_t{o.nodes}, o.us * 1e-3, share(o.us, sum), o.us * 1e-3 / o.nodes});
    }
    return t;
}

report::Table slowest_nodes_table(const NodeProfile& p, int n) {
    std::vector<const NodeTime*> order;
    for (const NodeTime& node : p.nodes) order.push_back(&node);
    std::stable_sort(order.begin(), order.end(), [](const NodeTime* a, const NodeTime* b) { return a->us > b->us; });
    if (static_cast<int>(order.size()) > n) order.resize(static_cast<size_t>(n));
    const double sum = p.sum_us();
    report::Table t({"node", "name", "op", "backend", "shape", "ms", "share_%"});
    for (const NodeTime* node : order) {
        t.add_row({int64_t{node->index}, node->name, node->op, node->backend, node->shape, node->us * 1e-3,
                   share(node->us, sum)});
    }
    return t;
}

nlohmann::ordered_json profile_json(const NodeProfile& p) {
    nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
    for (const NodeTime& n : p.nodes) {
        nodes.push_back({{"node", n.index}, {"name", n.name}, {"op", n.op}, {"backend", n.backend}, {"shape", n.shape},
                         {"type", n.type}, {"bytes", n.bytes}, {"us", n.us}});
    }
    return {{"reps", p.reps}, {"sum_us", p.sum_us()}, {"ops", report::to_json(op_table(p))}, {"nodes", std::move(nodes)}};
}

}  // namespace xb::tools
