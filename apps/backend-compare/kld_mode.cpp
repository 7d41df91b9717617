#include "kld_mode.hpp"

#include "backend/registry.hpp"
#include "backend/tensor_io.hpp"
#include "builtin/builtin_backends.hpp"
#include "session.hpp"

namespace xb::tools {

namespace {

struct Logits {
    std::string model;
    std::vector<float> values;  // [n_vocab, positions]
    int64_t n_vocab = 0;
    std::vector<int32_t> tokens;
};

// The config computed on `device` alone (the CPU last, as the scheduler wants it), every position's
// logits read back.
Result<Logits> logits_on(const CommonOptions& options, const std::string& device) {
    CommonOptions side = options;
    const Device* dev = global_registry().dev_by_name(device);
    side.backends = dev != nullptr && dev->type() == DeviceType::CPU ? std::vector<std::string>{device}
                                                                     : std::vector<std::string>{device, "CPU"};
    XB_ASSIGN_OR_RETURN(std::unique_ptr<Session> s, open_session(side));
    const config::Model& m = s->model;
    if (m.tokens.empty()) {
        return Status(StatusCode::InvalidArgument, "--kld scores each position on the sequence's next token: give the "
                                                   "tokens (--tokens FILE, or \"tokens\" in the config's params)");
    }
    if (m.outputs.empty() || m.outputs[0]->ne[1] != static_cast<int64_t>(m.tokens.size())) {
        return Status(StatusCode::InvalidArgument, "--kld needs every position's logits (--outputs all)");
    }
    XB_RETURN_IF_ERROR(s->sched->graph_compute(s->model.graph));
    const Tensor& out = *m.outputs[0];
    XB_ASSIGN_OR_RETURN(std::vector<float> values, tensor_get_f32(out));
    return Logits{m.name, std::move(values), out.ne[0], m.tokens};
}

}  // namespace

Result<KldRun> compare_logits(const CommonOptions& options, const std::string& base, const std::string& target) {
    XB_ASSIGN_OR_RETURN(Logits b, logits_on(options, base));
    XB_ASSIGN_OR_RETURN(Logits t, logits_on(options, target));
    XB_ASSIGN_OR_RETURN(report::KldStatistics s, report::kl_divergence(b.values, t.values, b.n_vocab, b.tokens));
    return KldRun{b.model, s};
}

}  // namespace xb::tools
