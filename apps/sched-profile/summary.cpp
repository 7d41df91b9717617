#include "summary.hpp"

#include <algorithm>
#include <cstdio>

#include "backend/row_split_buffer.hpp"

namespace xb::tools {

namespace {

std::optional<double> sum_ms(const SchedReport& r, double SplitReport::*seconds) {
    double total = 0;
    bool any = false;
    for (const SplitReport& s : r.splits) {
        if (s.*seconds < 0) continue;
        total += s.*seconds * 1e3;
        any = true;
    }
    return any ? std::optional<double>(total) : std::nullopt;
}

std::string pair_name(const std::pair<std::string, std::string>& pair) { return pair.first + "->" + pair.second; }

nlohmann::ordered_json optional_ms(const std::optional<double>& ms) {
    return ms ? nlohmann::ordered_json(*ms) : nlohmann::ordered_json(nullptr);
}

// A figure that is -1 when unknown, as JSON: the number or null.
nlohmann::ordered_json known(double v) { return v >= 0 ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr); }

// llama.cpp names the experts' stacked weights blk.N.ffn_{gate,up,down}_exps.weight (and .bias).
bool is_expert_weight(const std::string& name) { return name.find("_exps.") != std::string::npos; }

}  // namespace

int ProfileSummary::total_copies() const {
    int n = 0;
    for (const auto& [pair, c] : copies) n += c.count;
    for (const auto& [pair, c] : row_split) n += c.count;
    return n;
}

size_t ProfileSummary::total_copy_bytes() const {
    size_t n = 0;
    for (const auto& [pair, c] : copies) n += c.bytes;
    for (const auto& [pair, c] : row_split) n += c.bytes;
    return n;
}

ProfileSummary summarize(const Session& s, bool timed) {
    const SchedReport& r = s.sched->report();
    ProfileSummary out;
    out.model = s.model.name;
    out.backends = s.backend_names();
    out.n_nodes = s.model.graph.n_nodes();
    out.n_splits = s.sched->n_splits();
    for (const SplitReport& split : r.splits) {
        for (const SplitInputReport& in : split.inputs) {
            if (!in.copied) continue;
            PairCopies& c = out.copies[{in.source_backend, split.backend}];
            c.count += 1;
            c.bytes += in.bytes;
            if (in.modelled_seconds >= 0) c.modelled_ms = std::max(c.modelled_ms, 0.0) + in.modelled_seconds * 1e3;
            if (in.copy_seconds >= 0) c.copy_ms = std::max(c.copy_ms, 0.0) + in.copy_seconds * 1e3;
            c.link_gbps = slowest_link(c.link_gbps, in.link_gbps);
            if (is_expert_weight(in.name)) {
                out.expert_copies.count += 1;
                out.expert_copies.bytes += in.bytes;
            }
        }
    }
    out.row_split = row_split_copies(s.model.graph);
    for (const auto& b : s.backends) out.buffer_bytes[b->name()] = s.sched->buffer_size(*b);
    for (const config::WeightPlacement& w : s.model.placement.weights) {
        const Buffer* storage = storage_buffer(*w.tensor);
        const bool on_cpu = std::any_of(s.backends.begin(), s.backends.end(), [&](const auto& b) {
            return b->device().name() == w.device && b->device().type() == DeviceType::CPU;
        });
        if (storage != nullptr && on_cpu) {
            const std::string name = storage->name();
            auto& names = out.host_weight_buffers;
            if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
        }
        if (is_expert_weight(w.tensor->name)) out.expert_weight_bytes[w.device] += w.tensor->nbytes();
        const RowSplitBuffer* rows = row_split_storage(*w.tensor);
        const auto* slices = rows != nullptr ? rows->slices(*w.tensor) : nullptr;
        if (slices == nullptr) {
            out.weight_bytes[w.device] += w.tensor->nbytes();
            continue;
        }
        for (const auto& slice : *slices) out.weight_bytes[slice->buffer->type().device().name()] += slice->tensor.nbytes();
    }
    if (timed) {
        out.copy_ms = sum_ms(r, &SplitReport::copy_seconds);
        out.compute_ms = sum_ms(r, &SplitReport::compute_seconds);
        out.modelled_copy_ms = sum_ms(r, &SplitReport::modelled_copy_seconds);
    }
    return out;
}

std::string bound_hint(const ProfileSummary& s) {
    if (!s.copy_ms || !s.compute_ms || s.copies.empty()) return {};
    // A simulated link's copies are memcpy here; its modelled cost is what a real link would take.
    const double copy = std::max(*s.copy_ms, s.modelled_copy_ms.value_or(0.0));
    const double total = copy + *s.compute_ms;
    if (total <= 0 || copy <= 0.5 * total) return {};
    const auto heaviest = std::max_element(s.copies.begin(), s.copies.end(), [](const auto& a, const auto& b) {
        return a.second.bytes < b.second.bytes;
    });
    char text[256];
    std::snprintf(text, sizeof text,
                  "bound by copies: %.0f%% of the profiled time is copying split inputs (most: %s, %zu bytes in %d "
                  "copies); fewer splits or keeping weights on the device would help",
                  100.0 * copy / total, pair_name(heaviest->first).c_str(), heaviest->second.bytes,
                  heaviest->second.count);
    return text;
}

nlohmann::ordered_json to_json(const ProfileSummary& s) {
    nlohmann::ordered_json pairs = nlohmann::ordered_json::object();
    for (const auto& [pair, c] : s.copies) {
        pairs[pair_name(pair)] = {{"copies", c.count},          {"bytes", c.bytes},
                                  {"copy_ms", known(c.copy_ms)}, {"achieved_gbps", known(c.achieved_gbps())},
                                  {"link_gbps", known(c.link_gbps)}, {"modelled_ms", known(c.modelled_ms)},
                                  {"modelled_gbps", known(c.modelled_gbps())}};
    }
    nlohmann::ordered_json row_split = nlohmann::ordered_json::object();
    for (const auto& [pair, c] : s.row_split) row_split[pair_name(pair)] = {{"copies", c.count}, {"bytes", c.bytes}};
    nlohmann::ordered_json buffers = nlohmann::ordered_json::object();
    for (const auto& [name, bytes] : s.buffer_bytes) buffers[name] = bytes;
    nlohmann::ordered_json weights = nlohmann::ordered_json::object();
    for (const auto& [name, bytes] : s.weight_bytes) weights[name] = bytes;
    nlohmann::ordered_json experts = nlohmann::ordered_json::object();
    for (const auto& [name, bytes] : s.expert_weight_bytes) experts[name] = bytes;
    const std::string hint = bound_hint(s);
    return {{"model", s.model},
            {"backends", s.backends},
            {"n_nodes", s.n_nodes},
            {"n_splits", s.n_splits},
            {"n_copies", s.total_copies()},
            {"copy_bytes", s.total_copy_bytes()},
            {"copies_by_pair", pairs},
            {"row_split_copies_by_pair", row_split},
            {"buffer_bytes", buffers},
            {"weight_bytes", weights},
            {"host_weight_buffers", s.host_weight_buffers},
            {"expert_weight_bytes", experts},
            {"expert_copies", {{"copies", s.expert_copies.count}, {"bytes", s.expert_copies.bytes}}},
            {"copy_ms", optional_ms(s.copy_ms)},
            {"compute_ms", optional_ms(s.compute_ms)},
            {"modelled_copy_ms", optional_ms(s.modelled_copy_ms)},
            {"hint", hint.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(hint)}};
}

}  // namespace xb::tools
