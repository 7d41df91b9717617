// The end-to-end half of backend-compare's verdict. Per-node tolerances find the node that computes
// wrong; they cannot see an error that each node keeps within its own tolerance and the graph
// grows, nor one whose origin is guessed wrong where nothing can be computed again. So the graph's
// outputs are also judged against what the reference's own error allows there, and the node where
// the error starts growing past that is named.
//
// The end-to-end tolerance of an output is a margin (kEndToEndMargin in compare_report.hpp, 10 by
// default; --e2e-margin) times the reference's own error there (lib/sched/error_budget.hpp: each
// node's modelled rounding error, carried through the graph by computing it once more with every
// node perturbed by that much). Per output kind:
//  - float outputs: NMSE against the reference at most that, and no NaN/Inf mismatch;
//  - integer outputs (argmax ids): the same on the ids; the reference's own error rarely moves an
//    id, so they must match unless it does (a tie).
// Every compared node gets the same figure (its budget), and the growth node is the node whose
// error jumps most over what its inputs brought: excess = NMSE / budget, jump = its excess over the
// largest excess of what it reads (its sources, the nodes its views look into, and the nodes that
// wrote a cache it reads; at least 1); among nodes whose excess is above 1 the largest
// jump, the earliest on a tie. An infinite excess (NaN/Inf, or integers that differ where the
// reference's own error moves none) counts as the largest jump only where the inputs were within
// their budgets. Since the budget grows and shrinks through the graph as an error does, a node that
// only carries its inputs' error keeps their excess (jump about 1), and the node that made the
// error stands out by orders of magnitude.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "backend/backend.hpp"
#include "compare_report.hpp"
#include "config/model.hpp"
#include "sched/error_budget.hpp"

namespace xb::tools {

// The reference's own error, node by node, from `graph` computed on `backend` with every node kept
// (its results are left as they are): enough perturbed runs that the smallest output holds at
// least 64 samples (at most 8 runs).
// `start`: the model's recurrent states as the compute started from them (snapshot_states before
// it), which the perturbed runs start from too.
Result<ErrorBudget> reference_budget(Backend& backend, const config::Model& model, std::span<const LeafBytes> start);

// The model's recurrent states as they are now: taken before a compute that overwrites them.
Result<std::vector<LeafBytes>> snapshot_states(const config::Model& model);

// Adds the budgets (`margin` times the reference's own error), the outputs' verdict and the growth
// node to `report`, whose nodes hold the comparison's results.
void judge_end_to_end(const config::Model& model, const ErrorBudget& budget, double margin, CompareReport& report);

}  // namespace xb::tools
