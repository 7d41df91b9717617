// Graphviz DOT of a scheduled graph (sched-profile --dot), at one of three levels:
//   - split (the default): a box per split (its backend, nodes, layers and weights), an edge per pair
//     of splits a tensor crosses, labelled with the bytes crossing; readable for a 32-layer model;
//   - layer: the same with a box per layer of each split, splits as clusters;
//   - node: a legend of the backends' colours, one cluster per split outlined in its backend's
//     colour, computed nodes as boxes filled with their backend's colour, leafs as plain text, and
//     the copies the scheduler made of split inputs as dashed boxes; edges into another backend are
//     bold and take the destination's colour.
// Ids come from graph positions (n3, l0, c1, g2), not addresses, so the DOT files of two runs diff
// cleanly; every id an edge names is declared, and names from configs and model files are escaped.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "core/graph.hpp"
#include "sched/scheduler.hpp"

namespace xb {

enum class DotLevel { Split, Layer, Node };
// "split", "layer", "node"; nullopt for anything else.
std::optional<DotLevel> dot_level_from_name(std::string_view name);

// Call after the scheduler has split `graph` (alloc_graph or reserve) and before reset().
// (Non-const: the scheduler builds its report, whose splits give the clusters, on first request.)
void write_dot(const Graph& graph, Scheduler& sched, std::ostream& out, DotLevel level = DotLevel::Split);

// The fill colour of the backend of priority `index`, and the legend cluster of every backend.
const char* dot_backend_colour(int index);
void write_dot_legend(Scheduler& sched, std::ostream& out);
// The split and layer levels (sched_dot_groups.cpp).
void write_dot_groups(const Graph& graph, Scheduler& sched, std::ostream& out, DotLevel level);

// `text` as a DOT quoted string: quotes and backslashes escaped, control characters as spaces.
std::string dot_quoted(std::string_view text);

}  // namespace xb
