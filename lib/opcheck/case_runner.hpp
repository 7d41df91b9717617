// Running an op case on a backend: build its graph, place it in guarded memory on the backend,
// fill the inputs with the case's seeded values, compute, read the output back in logical order
// and check the guards.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "opcheck/case_graph.hpp"
#include "opcheck/guarded_buffer.hpp"
#include "opcheck/op_case.hpp"

namespace xb::opcheck {

// The bytes of a case's inputs as stored (the seeded values in each input's type), made once and
// set on any number of backends: perf mode times a case on several, and for a large case making
// them (random values, quantizing a 4096 x 4096 weight) is most of its preparation.
struct InputBytes {
    std::vector<std::vector<std::byte>> per_input;  // in declaration order
};
// How input_bytes fills a quantized input of a type with a quantizer: with the case's seeded values,
// quantized (what PreparedCase::prepare stores, and the tests need), or with random valid blocks
// (perf mode: a kernel's speed does not depend on the values, and quantizing a large weight, a
// mixture of experts' hundreds of millions of values, was most of a perf run). Read-only types
// always get random valid blocks.
enum class QuantizedInputs { FromValues, RandomBlocks };

// The seeded values of `graph`'s inputs (see input_seed) in their types: what
// PreparedCase::prepare stores, with the default FromValues.
Result<InputBytes> input_bytes(const CaseGraph& graph, uint64_t seed = 0,
                               QuantizedInputs quantized = QuantizedInputs::FromValues);

// A case placed on a backend with its inputs set, ready to compute, as often as wanted (perf).
class PreparedCase {
public:
    // Allocates `graph`'s tensors on `backend` (guarded) and fills the inputs from `seed` (see
    // input_seed). The graph must be one the backend supports (CaseGraph::unsupported_on).
    static Result<std::unique_ptr<PreparedCase>> prepare(CaseGraph graph, Backend& backend, uint64_t seed = 0);
    // The same with the inputs set from `bytes` (input_bytes of the same case); inputs() stays
    // empty (no reference is computed from them).
    static Result<std::unique_ptr<PreparedCase>> prepare_with(CaseGraph graph, Backend& backend, const InputBytes& bytes);

    const CaseGraph& graph() const { return graph_; }
    // The inputs as stored: integers exactly, floats read back after rounding to their type.
    const std::vector<RefArray>& inputs() const { return inputs_; }

    Status compute() { return backend_->graph_compute(graph_.graph()); }
    // The case's nodes `times` times over in one graph compute (perf: the launch cost amortised).
    Status compute_repeated(int times);
    // The output in logical order, as f32 values widened to double.
    Result<RefArray> output() const;
    // "" when no guard byte changed (see GuardedBuffer::find_overrun).
    Result<std::string> overrun() const { return memory_.find_overrun(); }

private:
    PreparedCase(CaseGraph graph, GuardedBuffer memory, Backend& backend);

    CaseGraph graph_;        // declared first: its tensors point into memory_, which goes first
    Graph repeated_;         // graph_'s nodes repeated (compute_repeated), built on first use
    GuardedBuffer memory_;
    Backend* backend_;
    std::vector<RefArray> inputs_;
};

struct RunOptions {
    bool reference = true;  // compute the float64 reference (CaseRun::ref)
    uint64_t seed = 0;      // varies every input's values (0: the values the tests use)
};

// What one run of a case produced.
struct CaseRun {
    std::string unsupported;  // non-empty: the backend does not support a node (why)
    Status status;            // the first failure of building, allocating, setting, computing or reading
    std::string overrun;      // non-empty: a write outside a tensor (which, where)
    RefArray out;             // the backend's output, in logical order
    RefArray ref;             // the reference output (when RunOptions::reference)
};
CaseRun run_case(const OpCase& c, Backend& backend, const RunOptions& options = {});

// The seed of input `input` of the case named `case_name`: a function of the names and `seed`
// only, so that every device and run sees the same values.
uint32_t input_seed(const std::string& case_name, size_t input, uint64_t seed = 0);

}  // namespace xb::opcheck
