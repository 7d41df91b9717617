// -P NAME:KEY=VALUE[,KEY=VALUE...], parsed once at start-up into what every path of every tool
// applies: each device's settings, and its faults (fault_node), which name nodes of the config's
// whole graph and so are resolved against that graph once it is built.
#pragma once

#include <string>
#include <vector>

#include "backend/registry.hpp"
#include "core/graph.hpp"
#include "core/status.hpp"

namespace xb::tools {

// One -P item's settings for Device::configure, fault_node left out.
struct DeviceSetting {
    std::string device;
    std::string params;  // "key=value,..." ("" when the item held only fault_node)
    std::string given;   // the -P text, for messages
};

// One -P item's fault_node: the nodes, each an index into the whole graph or a node's name.
struct FaultRequest {
    std::string device;
    std::vector<std::string> nodes;
    std::string given;
};

// A fault resolved against a graph: the device that perturbs node `index`.
struct ResolvedFault {
    std::string device;
    int index = 0;
    std::string given;
};

class DeviceParams {
public:
    // InvalidArgument, naming the item, for one that is not NAME:KEY=VALUE[,...].
    static Result<DeviceParams> parse(const std::vector<std::string>& given);

    // Configures each device with its settings (not its faults). NotFound for a device that is not
    // registered (with those that are); a device's own error for a key or value it refuses.
    Status apply(Registry& registry) const;
    // Resolves every fault against `graph` (the config's whole graph, named by name_nodes): a
    // number is node N of it, a name the node of that name. An index past the end, a name no node
    // has (with a suggestion) or a view (never computed, so nothing would be injected) is
    // InvalidArgument. Each device is then given its nodes by name, so that whatever piece of the
    // graph it computes (a split of the scheduler, one node of a comparison) the same node is
    // perturbed. Returns the faults, one per node.
    Result<std::vector<ResolvedFault>> apply_faults(Registry& registry, const Graph& graph) const;
    // The faults as given, a number meaning node N of whatever graph the device computes (op-check:
    // each case's own graph).
    Status apply_faults_as_given(Registry& registry) const;

    const std::vector<FaultRequest>& faults() const { return faults_; }

private:
    std::vector<DeviceSetting> settings_;
    std::vector<FaultRequest> faults_;
};

// Names every unnamed node "node<i>" and makes the nodes' names unique (a node that has the name of
// an earlier one gets "#<i>" appended), so that reports, saved results and faults can refer to any node by
// name. A graph built twice from one config is named the same both times.
void name_nodes(Graph& graph);

}  // namespace xb::tools
