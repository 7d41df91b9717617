// How far a graph's results may drift between two correct backends: the reference's own rounding
// error, node by node, carried through the graph as the graph itself carries errors.
//
// own_error(node) models the error (NMSE against exact arithmetic from the same inputs) that one
// correct computation of a node makes in its types: the rounding of its result, the rounding of
// sums over long rows, and the rounding of a product's activations to its weights' precision
// (f16, bf16, or the 8-bit blocks every backend quantizes activations into for quantized weights).
// propagate_own_error then measures what those errors become downstream: it computes the graph
// once more with every node's result perturbed by random noise of exactly that NMSE and compares
// every node with the unperturbed results. Softmax and norms that amplify an error, residual sums
// that dilute one, and products that mix rows all act on the noise as they act on a real error,
// so the figure at an output is the reference's own error there, not a bound composed by hand.
#pragma once

#include <cstdint>
#include <cstddef>
#include <span>
#include <vector>

#include "backend/backend.hpp"
#include "core/graph.hpp"
#include "core/status.hpp"

namespace xb {

// The unit roundoff of a float type (f32 2^-24, f16 2^-11, bf16 2^-8); 0 for other types.
double unit_roundoff(DType type);

// The modelled own error (NMSE) of one correct computation of `node` from exact inputs:
//  - views, copies and gathers that keep the type, and integer results: 0 (exact);
//  - every other result: one rounding to its type (u^2/3: a rounding error is uniform in
//    [-u, u] relative), or the format's own error for a quantized result
//    (quantization_nmse_bound), times the roundings of the op (4 for sqrt, log, activations,
//    gated units and rope, which evaluate a function in several steps);
//  - sums over K terms (mul_mat, out_prod, flash_attn_ext, soft_max, norms, sum, mean) add
//    K u_f32^2 / 3 (rounding errors of a long sum add up like a random walk);
//  - products of f16, bf16 or quantized weights add the rounding of their activations to the
//    weights' precision: u^2/3 of f16 or bf16, and quantization_nmse_bound(q8_0) for quantized
//    weights (every backend rounds the activations to 8-bit blocks before the integer dot
//    products: q8_K on the CPU, q8_1 on CUDA); flash attention with f16 K/V likewise.
//  - GELU and GEGLU add gelu_table_error: ggml's CPU, the field's reference implementation,
//    evaluates GELU through a table of f16 values.
// Faster kernels (approximate exp, tensor cores) make errors of the same kinds a few times larger;
// the compare tools' margin over this figure absorbs that.
double own_error(const Tensor& node);

// The error (NMSE) of evaluating GELU (gelu, gelu_quick, geglu) on f16-rounded inputs into f16
// results, as ggml's CPU does through its table: two f16 roundings; 0 for every other node.
double gelu_table_error(const Tensor& node);

struct ErrorBudget {
    std::vector<double> own;         // per node: own_error (0 for views)
    std::vector<double> propagated;  // per node: NMSE of the perturbed runs against the graph's results
    int draws = 0;                   // perturbed runs averaged
};

// A leaf's bytes before the graph's compute wrote into it: a recurrent state, which the graph
// reads at its start and overwrites at its end, so that after the compute the leaf no longer
// holds what the compute started from.
struct LeafBytes {
    const Tensor* leaf = nullptr;
    std::vector<std::byte> bytes;
};

// `graph` must be computed on `backend` with every node's result kept (it is read, never
// changed). Computes it `draws` times more, node by node, in a copy that shares its read-only
// leafs (the weights), each node's result perturbed by noise of NMSE own_error(node) (each
// element scaled by 1 + N(0, own), seeded by `seed`), and returns per node the mean NMSE of the
// perturbed results against the graph's own. Every run starts from the leafs the graph started
// from: the ones in `start` as given there, the others as the graph holds them.
Result<ErrorBudget> propagate_own_error(Backend& backend, const Graph& graph, int draws, uint64_t seed,
                                        std::span<const LeafBytes> start = {});

}  // namespace xb
