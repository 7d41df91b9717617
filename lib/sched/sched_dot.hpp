// Graphviz DOT of a scheduled graph (sched-profile --dot): a legend of the backends' colours, one
// cluster per split outlined in its backend's colour, computed nodes as boxes filled with their
// backend's colour, leafs as plain text, and the copies the scheduler made of split inputs as dashed
// boxes; edges into another backend are bold and take the destination's colour. Ids come from graph
// positions (n3, l0, c1), not addresses, so the DOT files of two runs diff cleanly; every id an
// edge names is declared, and names from configs and model files are escaped.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

#include "core/graph.hpp"
#include "sched/scheduler.hpp"

namespace xb {

// Call after the scheduler has split `graph` (alloc_graph or reserve) and before reset().
// (Non-const: the scheduler builds its report, whose splits give the clusters, on first request.)
void write_dot(const Graph& graph, Scheduler& sched, std::ostream& out);

// `text` as a DOT quoted string: quotes and backslashes escaped, control characters as spaces.
std::string dot_quoted(std::string_view text);

}  // namespace xb
