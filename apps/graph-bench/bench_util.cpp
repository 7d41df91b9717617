#include "bench_util.hpp"

#include <cstdlib>
#include <vector>

#include "alloc/context_alloc.hpp"
#include "backend/registry.hpp"
#include "backend/tensor_io.hpp"
#include "builtin/builtin_backends.hpp"
#include "core/quant.hpp"
#include "core/quant_random.hpp"
#include "models/decoder.hpp"

namespace bench {

std::unique_ptr<xb::Backend> cpu_backend() {
    auto b = xb::global_registry().init_by_name("CPU");
    if (!b.is_ok()) std::abort();
    return std::move(b).value();
}

std::vector<float> uniform_values(std::mt19937& rng, int64_t n, float lo, float hi) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = dist(rng);
    return v;
}

void fill_random(xb::Tensor& t, std::mt19937& rng, float lo, float hi) {
    if (xb::is_quantized(t.type) && !xb::can_quantize(t.type)) {
        // A read-only format (iq1..iq3, nvfp4): random valid blocks, values within about [-1, 1].
        std::vector<std::byte> blocks(t.nbytes());
        xb::fill_random_blocks(t.type, blocks.data(), static_cast<int64_t>(blocks.size() / xb::type_size(t.type)), rng());
        if (!xb::tensor_set(t, blocks.data(), 0, blocks.size()).is_ok()) std::abort();
        return;
    }
    if (!xb::tensor_set_f32(t, uniform_values(rng, t.nelements(), lo, hi)).is_ok()) std::abort();
}

void run_graph(benchmark::State& state, xb::Backend& backend, const xb::Graph& graph, double flops) {
    for (auto _ : state) {
        if (!backend.graph_compute(graph).is_ok()) state.SkipWithError("graph_compute failed");
    }
    if (flops > 0) state.counters["GFLOPS"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

size_t bytes_moved(const xb::Tensor& node) {
    size_t bytes = node.nbytes();
    for (const xb::Tensor* src : node.src) {
        if (src != nullptr) bytes += src->nbytes();
    }
    if (node.op == xb::Op::GetRows) {
        bytes -= node.src[0]->nbytes();
        bytes += static_cast<size_t>(node.nelements()) * xb::type_size(node.src[0]->type);
    }
    return bytes;
}

bool fill_decoder(const xb::DecoderParams& p, const xb::Decoder& model) {
    std::mt19937 rng(3);
    for (xb::Tensor* w : model.weights()) fill_random(*w, rng, -0.05f, 0.05f);
    std::vector<int32_t> tokens(static_cast<size_t>(p.n_tokens));
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>((i * 7919) % static_cast<size_t>(p.n_vocab));
    const std::vector<int32_t> positions = xb::batch_positions(p);
    const std::vector<int32_t> out_rows = xb::output_row_ids(p);
    const bool out_ok = model.out_ids == nullptr || xb::tensor_set(*model.out_ids, out_rows.data(), 0, model.out_ids->nbytes()).is_ok();
    // The batch's keys and values go to the cells of its positions.
    const bool cells_ok = model.kv_idxs == nullptr || xb::tensor_set(*model.kv_idxs, positions.data(), 0, model.kv_idxs->nbytes()).is_ok();
    const bool window_ok = model.kq_mask_swa == nullptr ||
                           xb::tensor_set_f32(*model.kq_mask_swa, xb::causal_mask_values(p.n_attended(), p.n_tokens, p.swa.window)).is_ok();
    return xb::tensor_set(*model.tokens, tokens.data(), 0, model.tokens->nbytes()).is_ok() &&
           xb::tensor_set(*model.positions, positions.data(), 0, model.positions->nbytes()).is_ok() &&
           xb::tensor_set_f32(*model.kq_mask, xb::causal_mask_values(p.n_attended(), p.n_tokens)).is_ok() && window_ok && out_ok &&
           cells_ok;
}

xb::Result<std::unique_ptr<CpuDecoder>> cpu_decoder(const xb::DecoderParams& p) {
    auto d = std::make_unique<CpuDecoder>();
    d->backend = cpu_backend();
    XB_ASSIGN_OR_RETURN(d->model, xb::build_decoder(d->ctx, p));
    XB_ASSIGN_OR_RETURN(d->graph, xb::Graph::build(d->model.graph_outputs));
    XB_ASSIGN_OR_RETURN(d->buffer, xb::alloc_ctx_tensors(d->ctx, *d->backend));
    if (!fill_decoder(p, d->model)) return xb::Status(xb::StatusCode::Internal, "the decoder's inputs could not be set");
    return d;
}

}  // namespace bench
