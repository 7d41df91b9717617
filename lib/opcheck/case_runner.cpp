#include "opcheck/case_runner.hpp"

#include <algorithm>
#include <cstring>
#include <random>
#include <utility>

#include "backend/tensor_io.hpp"
#include "core/quant.hpp"
#include "core/quant_random.hpp"

namespace xb::opcheck {

namespace {

template <typename Int>
Status set_integers(Tensor& t, const std::vector<float>& values) {
    std::vector<Int> ints(values.size());
    std::transform(values.begin(), values.end(), ints.begin(), [](float v) { return static_cast<Int>(v); });
    return tensor_set(t, ints.data(), 0, ints.size() * sizeof(Int));
}

// Writes `values` into the input and returns what the reference sees: integers as generated,
// floats as read back after being stored in the tensor's type.
Result<RefArray> store_input(Tensor& t, const std::vector<float>& values) {
    const Shape ne = t.ne;
    if (t.type == DType::I32 || t.type == DType::I64) {
        XB_RETURN_IF_ERROR(t.type == DType::I32 ? set_integers<int32_t>(t, values) : set_integers<int64_t>(t, values));
        return RefArray(ne, std::vector<double>(values.begin(), values.end()));
    }
    XB_RETURN_IF_ERROR(tensor_set_f32(t, values));
    XB_ASSIGN_OR_RETURN(std::vector<float> stored, tensor_get_f32(t));
    return RefArray(ne, std::vector<double>(stored.begin(), stored.end()));
}

// Random valid blocks of a read-only format, and what the reference sees (their dequantized values).
Result<RefArray> store_random_blocks(Tensor& t, uint64_t seed) {
    std::vector<std::byte> blocks(t.nbytes());
    fill_random_blocks(t.type, blocks.data(), static_cast<int64_t>(blocks.size() / type_size(t.type)), seed);
    XB_RETURN_IF_ERROR(tensor_set(t, blocks.data(), 0, blocks.size()));
    XB_ASSIGN_OR_RETURN(std::vector<float> stored, tensor_get_f32(t));
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

Result<InputBytes> input_bytes(const CaseGraph& graph, uint64_t seed) {
    const std::vector<InputSpec>& specs = graph.builder().inputs();
    InputBytes bytes;
    for (size_t i = 0; i < specs.size(); ++i) {
        std::mt19937 rng(input_seed(graph.source().name, i, seed));  // as fill_inputs draws
        const Tensor& t = *specs[i].tensor;
        std::vector<std::byte> stored;
        if (is_quantized(t.type) && !can_quantize(t.type)) {
            stored.resize(t.nbytes());
            fill_random_blocks(t.type, stored.data(), static_cast<int64_t>(stored.size() / type_size(t.type)), rng());
        } else if (t.type == DType::I32 || t.type == DType::I64) {
            const std::vector<float> values = specs[i].generate(t.ne, rng);
            stored.resize(values.size() * type_size(t.type));
            for (size_t k = 0; k < values.size(); ++k) {
                if (t.type == DType::I32) {
                    const auto v = static_cast<int32_t>(values[k]);
                    std::memcpy(stored.data() + k * sizeof v, &v, sizeof v);
                } else {
                    const auto v = static_cast<int64_t>(values[k]);
                    std::memcpy(stored.data() + k * sizeof v, &v, sizeof v);
                }
            }
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
    XB_ASSIGN_OR_RETURN(GuardedBuffer memory, GuardedBuffer::allocate(graph.ctx(), backend.default_buffer_type()));
    std::unique_ptr<PreparedCase> p(new PreparedCase(std::move(graph), std::move(memory), backend));
    XB_RETURN_IF_ERROR(p->fill_inputs(seed));
    return p;
}

Status PreparedCase::fill_inputs(uint64_t seed) {
    const std::vector<InputSpec>& specs = graph_.builder().inputs();
    inputs_.clear();
    for (size_t i = 0; i < specs.size(); ++i) {
        std::mt19937 rng(input_seed(graph_.source().name, i, seed));
        Tensor& t = *specs[i].tensor;
        if (is_quantized(t.type) && !can_quantize(t.type)) {
            // A read-only format (iq1/iq2/iq3, nvfp4): random valid blocks stand for the values.
            XB_ASSIGN_OR_RETURN(RefArray stored, store_random_blocks(t, rng()));
            inputs_.push_back(std::move(stored));
            continue;
        }
        XB_ASSIGN_OR_RETURN(RefArray stored, store_input(t, specs[i].generate(t.ne, rng)));
        inputs_.push_back(std::move(stored));
    }
    return Status::ok();
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
