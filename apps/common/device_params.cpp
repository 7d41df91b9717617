#include "device_params.hpp"

#include <unordered_set>

#include "cli.hpp"
#include "config/config_error.hpp"

namespace xb::tools {

namespace {

Status bad_item(const std::string& given) {
    return Status(StatusCode::InvalidArgument, "-P " + given + ": expected NAME:KEY=VALUE, e.g. SIM0:fault_node=3");
}

Result<Device*> device_named(Registry& registry, const std::string& name, const std::string& given) {
    Device* d = registry.dev_by_name(name);
    if (d == nullptr) {
        return Status(StatusCode::NotFound, "-P " + given + ": no device named '" + name + "'; available: " +
                                                registry.device_names());
    }
    return d;
}

Status configure(Registry& registry, const std::string& device, const std::string& params, const std::string& given) {
    XB_ASSIGN_OR_RETURN(Device * d, device_named(registry, device, given));
    const Status s = d->configure(params);
    return s.is_ok() ? s : Status(s.code(), "-P " + given + ": " + s.message());
}

// Node `item` (an index or a name) of `graph`; it must be computed.
Result<int> fault_index(const FaultRequest& f, const std::string& item, const Graph& graph) {
    int index = -1;
    if (item.find_first_not_of("0123456789") == std::string::npos) {
        if (item.size() > 9 || std::stoi(item) >= graph.n_nodes()) {
            return Status(StatusCode::InvalidArgument, "-P " + f.given + ": the graph has " +
                                                           std::to_string(graph.n_nodes()) + " nodes (0 to " +
                                                           std::to_string(graph.n_nodes() - 1) + ")");
        }
        index = std::stoi(item);
    } else {
        std::vector<std::string> names;
        for (int i = 0; i < graph.n_nodes() && index < 0; ++i) {
            if (graph.node(i)->name == item) index = i;
        }
        if (index < 0) {
            for (const Tensor* n : graph.nodes()) {
                if (!op_is_view(n->op)) names.push_back(n->name);
            }
            return Status(StatusCode::InvalidArgument,
                          "-P " + f.given + ": " + unknown_name("node", item, names) + " in the graph");
        }
    }
    const Tensor& node = *graph.node(index);
    if (op_is_view(node.op)) {
        return Status(StatusCode::InvalidArgument, "-P " + f.given + ": node #" + std::to_string(index) + " '" +
                                                       node.display_name() + "' is a view (" + node.op_label() +
                                                       "), which no backend computes; choose a computed node");
    }
    return index;
}

}  // namespace

Result<DeviceParams> DeviceParams::parse(const std::vector<std::string>& given) {
    DeviceParams out;
    for (const std::string& item : given) {
        // The device is everything before the last ':' ahead of the first '=' (ggml:CPU:threads=4).
        const size_t colon = item.rfind(':', item.find('='));
        if (colon == std::string::npos || colon == 0) return bad_item(item);
        const std::string device = item.substr(0, colon);
        auto params = parse_device_params(std::string_view(item).substr(colon + 1));
        if (!params.is_ok()) return Status(StatusCode::InvalidArgument, "-P " + item + ": " + params.status().message());
        DeviceSetting setting{device, "", item};
        for (const DeviceParam& p : *params) {
            if (p.key == "fault_node") {
                FaultRequest fault{device, split_list(p.value, '+'), item};
                if (p.value == "none") fault.nodes.clear();
                out.faults_.push_back(std::move(fault));
                continue;
            }
            setting.params += (setting.params.empty() ? "" : ",") + p.key + "=" + p.value;
        }
        if (!setting.params.empty()) out.settings_.push_back(std::move(setting));
    }
    return out;
}

Status DeviceParams::apply(Registry& registry) const {
    for (const DeviceSetting& s : settings_) XB_RETURN_IF_ERROR(configure(registry, s.device, s.params, s.given));
    // A device named only by its faults must exist too.
    for (const FaultRequest& f : faults_) XB_RETURN_IF_ERROR(device_named(registry, f.device, f.given).status());
    return Status::ok();
}

Result<std::vector<ResolvedFault>> DeviceParams::apply_faults(Registry& registry, const Graph& graph) const {
    std::vector<ResolvedFault> resolved;
    for (const FaultRequest& f : faults_) {
        std::string names;
        for (const std::string& item : f.nodes) {
            XB_ASSIGN_OR_RETURN(const int index, fault_index(f, item, graph));
            names += (names.empty() ? "" : "+") + graph.node(index)->name;
            resolved.push_back({f.device, index, f.given});
        }
        XB_RETURN_IF_ERROR(configure(registry, f.device, "fault_node=" + (names.empty() ? "none" : names), f.given));
    }
    return resolved;
}

Status DeviceParams::apply_faults_as_given(Registry& registry) const {
    for (const FaultRequest& f : faults_) {
        std::string items;
        for (const std::string& item : f.nodes) items += (items.empty() ? "" : "+") + item;
        XB_RETURN_IF_ERROR(configure(registry, f.device, "fault_node=" + (items.empty() ? "none" : items), f.given));
    }
    return Status::ok();
}

void name_nodes(Graph& graph) {
    std::unordered_set<std::string> taken;
    for (int i = 0; i < graph.n_nodes(); ++i) {
        Tensor& node = *graph.node(i);
        if (node.name.empty()) node.name = "node" + std::to_string(i);
        if (!taken.insert(node.name).second) {
            node.name += "#" + std::to_string(i);
            taken.insert(node.name);
        }
    }
}

}  // namespace xb::tools
