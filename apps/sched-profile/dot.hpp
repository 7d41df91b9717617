// Graphviz DOT of a scheduled graph: one box per computed node, filled by its backend's colour,
// edges from sources (leafs as plain text), split inputs drawn bold.
#pragma once

#include <string>

#include "core/status.hpp"
#include "sched/scheduler.hpp"

namespace xb::tools {

Status write_dot(const Graph& graph, Scheduler& sched, const std::string& path);

}  // namespace xb::tools
