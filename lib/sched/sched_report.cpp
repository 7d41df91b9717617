// The scheduler's report of its last split, and its debug print (the layout of ggml's GGML_SCHED_DEBUG output).
#include "sched/sched_report.hpp"

#include "sched/scheduler.hpp"

namespace xb {

const char* host_memory_name(HostMemory m) {
    switch (m) {
        case HostMemory::None: return "";
        case HostMemory::Pinned: return "pinned";
        case HostMemory::Pageable: return "pageable";
    }
    return "?";
}

const char* assign_reason_code(AssignReason r) {
    switch (r) {
        case AssignReason::None: return "-";
        case AssignReason::User: return "usr";
        case AssignReason::PreallocDst: return "1.dst";
        case AssignReason::PreallocView: return "1.vsrc";
        case AssignReason::GraphInput: return "1.inp";
        case AssignReason::Offload: return "1.off";
        case AssignReason::Weight: return "1.wgt";
        case AssignReason::ExpandGpuDown: return "2.gpu-dn";
        case AssignReason::ExpandGpuUp: return "2.gpu-up";
        case AssignReason::ExpandDown: return "2.dn";
        case AssignReason::ExpandUp: return "2.up";
        case AssignReason::Upgrade: return "3.upg";
        case AssignReason::MostInputs: return "3.best";
        case AssignReason::FromView: return "4.vsrc";
        case AssignReason::FromConsumer: return "4.cur";
    }
    return "?";
}

const char* assign_reason_text(AssignReason r) {
    switch (r) {
        case AssignReason::None: return "not assigned";
        case AssignReason::User: return "assigned by the user";
        case AssignReason::PreallocDst: return "its memory is on this backend";
        case AssignReason::PreallocView: return "the memory it views is on this backend";
        case AssignReason::GraphInput: return "graph input: set on the CPU";
        case AssignReason::Offload: return "offloaded from the CPU weights by the backend's request";
        case AssignReason::Weight: return "uses a weight stored on this backend";
        case AssignReason::ExpandGpuDown: return "follows the previous accelerated node";
        case AssignReason::ExpandGpuUp: return "follows the next accelerated node";
        case AssignReason::ExpandDown: return "follows the previous node";
        case AssignReason::ExpandUp: return "follows the next node";
        case AssignReason::Upgrade: return "moved to a higher-priority backend sharing the buffer type";
        case AssignReason::MostInputs: return "the supporting backend that can read most of its inputs";
        case AssignReason::FromView: return "a view goes with its source";
        case AssignReason::FromConsumer: return "a source goes with its first consumer";
    }
    return "?";
}

namespace {
std::string human_size(size_t bytes) {
    char buf[32];
    if (bytes >= 1024 * 1024) {
        std::snprintf(buf, sizeof buf, "%zuM", bytes / 1024 / 1024);
    } else {
        std::snprintf(buf, sizeof buf, "%zuK", bytes / 1024);
    }
    return buf;
}
}  // namespace

void SchedReport::print(std::FILE* out, int level) const {
    size_t next_node = 0;
    for (const SplitReport& s : splits) {
        std::fprintf(out, "\n## SPLIT #%d: %s # %zu inputs:", s.index, s.backend.c_str(), s.inputs.size());
        for (const SplitInputReport& in : s.inputs) {
            std::fprintf(out, " [%s (%s)]", in.name.c_str(), human_size(in.bytes).c_str());
        }
        std::fprintf(out, "\n");
        if (level < 2) continue;
        for (; next_node < nodes.size() && nodes[next_node].index < s.node_end; ++next_node) {
            const NodeAssignment& n = nodes[next_node];
            std::fprintf(out, "node #%3d (%10.10s): %20.20s [%5.5s %8.8s]\n", n.index, n.op.c_str(), n.name.c_str(),
                         n.backend.c_str(), assign_reason_code(n.reason));
        }
    }
}

const SchedReport& Scheduler::report() {
    if (report_stale_ && current_graph_ != nullptr) {
        const auto copy_bytes = std::move(report_.copy_bytes);
        build_report(*current_graph_);
        report_.copy_bytes = copy_bytes;
        report_stale_ = false;
    }
    return report_;
}

void Scheduler::build_report(const Graph& graph) {
    report_ = SchedReport{};
    for (const Backend* b : backends_) report_.backends.emplace_back(b->name());
    for (size_t i = 0; i < splits_.size(); ++i) {
        const Split& s = splits_[i];
        SplitReport r;
        r.index = static_cast<int>(i);
        r.backend = backend_at(s.backend).name();
        r.node_begin = s.begin;
        r.node_end = s.end;
        for (int k = s.begin; k < s.end; ++k) r.n_nodes += op_is_view(graph.node(k)->op) ? 0 : 1;
        for (const Tensor* in : s.inputs) {
            const BackendId b = backend_of(in);
            r.inputs.push_back({in->display_name(), in->nbytes(), b.valid() ? backend_at(b).name() : "?", true});
        }
        report_.splits.push_back(std::move(r));
    }
    for (int i = 0; i < graph.n_nodes(); ++i) {
        const Tensor* node = graph.node(i);
        if (op_is_view(node->op)) continue;
        const size_t slot = static_cast<size_t>(slot_of(node));
        const BackendId b = backend_of_[slot];
        std::string unsupported_by;
        for (int h = 0; h < (b.valid() ? b.value() : n_backends()); ++h) {
            if (backend_at(BackendId(h)).supports_op(*node)) continue;
            unsupported_by += (unsupported_by.empty() ? "" : ", ") + std::string(backend_at(BackendId(h)).name());
        }
        report_.nodes.push_back({i, node->display_name(), node->op_label(), b.valid() ? backend_at(b).name() : "?",
                                 reason_of_[slot], std::move(unsupported_by)});
    }
}

}  // namespace xb
