#include "opcheck/case_runner.hpp"

#include <cstring>
#include <random>
#include <utility>

#include "backend/tensor_io.hpp"
#include "core/quant.hpp"
#include "core/quant_random.hpp"

namespace xb::opcheck {

namespace {

// The generated values of an index input, stored as Int.
template <typename Int>
std::vector<std::byte> integer_bytes(const std::vector<float>& values) {
    std::vector<std::byte> bytes(values.size() * sizeof(Int));
    for (size_t k = 0; k < values.size(); ++k) {
        const auto v = static_cast<Int>(values[k]);
        std::memcpy(bytes.data() + k * sizeof v, &v, sizeof v);
    }
    return bytes;
}

// What the reference sees of a stored input: integers as stored, floats (and the values of
// quantized blocks) as read back in f32.
Result<RefArray> stored_values(const Tensor& t) {
    if (t.type == DType::I64) {
        std::vector<int64_t> ints(static_cast<size_t>(t.nelements()));
        XB_RETURN_IF_ERROR(tensor_get(t, ints.data(), 0, ints.size() * sizeof(int64_t)));
        return RefArray(t.ne, std::vector<double>(ints.begin(), ints.end()));
    }
    XB_ASSIGN_OR_RETURN(std::vector<float> stored, tensor_get_f32(t));  // i32 exactly too
    return RefArray(t.ne, std::vector<double>(stored.begin(), stored.end()));
}

}  // namespace

uint32_t input_seed(const std::string& case_name, size_t input, uint64_t seed) {
    uint32_t h = 2166136261u;  // FNV-1a
    for (unsigned char c : case_name) h = (h ^ c) * 16777619u;
    // seed 0 leaves h unchanged, so the default values do not depend on this mixing.
    h ^= static_cast<uint32_t>(seed ^ (seed >> 32)) * 0x85ebca6bu;
    return h ^ static_cast<uint32_t>(input * 0x9e3779b9u);
}

PreparedCase::PreparedCase(CaseGraph graph, GuardedBuffer memory, Backend& backend)
    : graph_(std::move(graph)), memory_(std::move(memory)), backend_(&backend) {}

Status PreparedCase::compute_repeated(int times) {
    if (times == 1) return compute();
    if (repeated_.n_nodes() != times * graph_.graph().n_nodes()) repeated_ = graph_.graph().repeated(times);
    return backend_->graph_compute(repeated_);
}

Result<InputBytes> input_bytes(const CaseGraph& graph, uint64_t seed, QuantizedInputs quantized) {
    const std::vector<InputSpec>& specs = graph.builder().inputs();
    InputBytes bytes;
    for (size_t i = 0; i < specs.size(); ++i) {
        std::mt19937 rng(input_seed(graph.source().name, i, seed));
        const Tensor& t = *specs[i].tensor;
        std::vector<std::byte> stored;
        if (is_quantized(t.type) && (!can_quantize(t.type) || quantized == QuantizedInputs::RandomBlocks)) {
            // A read-only format (iq1/iq2/iq3, nvfp4), or a perf case: random valid blocks stand for
            // the values.
            stored.resize(t.nbytes());
            fill_random_blocks(t.type, stored.data(), static_cast<int64_t>(stored.size() / type_size(t.type)), rng());
        } else if (t.type == DType::I32) {
            stored = integer_bytes<int32_t>(specs[i].generate(t.ne, rng));
        } else if (t.type == DType::I64) {
            stored = integer_bytes<int64_t>(specs[i].generate(t.ne, rng));
        } else {
            XB_ASSIGN_OR_RETURN(stored, f32_to_tensor_bytes(t, specs[i].generate(t.ne, rng)));
        }
        bytes.per_input.push_back(std::move(stored));
    }
    return bytes;
}

Result<std::unique_ptr<PreparedCase>> PreparedCase::prepare_with(CaseGraph graph, Backend& backend,
                                                                  const InputBytes& bytes) {
    XB_ASSIGN_OR_RETURN(GuardedBuffer memory, GuardedBuffer::allocate(graph.ctx(), backend.default_buffer_type()));
    std::unique_ptr<PreparedCase> p(new PreparedCase(std::move(graph), std::move(memory), backend));
    const std::vector<InputSpec>& specs = p->graph_.builder().inputs();
    if (specs.size() != bytes.per_input.size()) {
        return Status(StatusCode::InvalidArgument, "prepare_with: the input bytes are another case's");
    }
    for (size_t i = 0; i < specs.size(); ++i) {
        const std::vector<std::byte>& b = bytes.per_input[i];
        XB_RETURN_IF_ERROR(tensor_set(*specs[i].tensor, b.data(), 0, b.size()));
    }
    return p;
}

Result<std::unique_ptr<PreparedCase>> PreparedCase::prepare(CaseGraph graph, Backend& backend, uint64_t seed) {
    XB_ASSIGN_OR_RETURN(InputBytes bytes, input_bytes(graph, seed));
    XB_ASSIGN_OR_RETURN(std::unique_ptr<PreparedCase> p, prepare_with(std::move(graph), backend, bytes));
    for (const InputSpec& spec : p->graph_.builder().inputs()) {
        XB_ASSIGN_OR_RETURN(RefArray stored, stored_values(*spec.tensor));
        p->inputs_.push_back(std::move(stored));
    }
    return p;
}

Result<RefArray> PreparedCase::output() const {
    const Tensor& out = graph_.output();
    XB_ASSIGN_OR_RETURN(std::vector<float> values, tensor_get_f32(out));
    return RefArray(out.ne, std::vector<double>(values.begin(), values.end()));
}

namespace {

Status run_prepared(PreparedCase& p, const RunOptions& options, CaseRun& run) {
    XB_RETURN_IF_ERROR(p.compute());
    XB_ASSIGN_OR_RETURN(run.overrun, p.overrun());
    XB_ASSIGN_OR_RETURN(run.out, p.output());
    if (options.reference) run.ref = p.graph().source().reference(p.inputs());
    return Status::ok();
}

}  // namespace

CaseRun run_case(const OpCase& c, Backend& backend, const RunOptions& options) {
    CaseRun run;
    auto graph = CaseGraph::build(c);
    if (!graph.is_ok()) {
        run.status = graph.status();
        return run;
    }
    run.unsupported = graph->unsupported_on(backend.device());
    if (!run.unsupported.empty()) return run;
    auto prepared = PreparedCase::prepare(std::move(*graph), backend, options.seed);
    run.status = prepared.is_ok() ? run_prepared(**prepared, options, run) : prepared.status();
    return run;
}

}  // namespace xb::opcheck
