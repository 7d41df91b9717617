#include "sim/sim_settings.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <vector>

#include "backend/failure_countdown.hpp"
#include "backend/registry.hpp"
#include "core/op_params.hpp"
#include "core/message_text.hpp"

namespace xb::sim {

namespace {

constexpr const char* kKnownKeys = "memory, host_buffer, offload_min_batch, unsupported, threads, bandwidth_gbps, latency_us, pageable_ratio, peer_bandwidth_gbps, peer_latency_us, fault_node, fault_size, fail_alloc, fail_copy";
constexpr int kMaxThreads = 1024;

struct RawParam {
    std::string key;
    std::string value;
};

// Splits "key=value,..." (parse_device_params: items without '=' continue the previous value,
// so "unsupported=rope,get_rows" is one parameter); op lists are kept joined with '+'.
Result<std::vector<RawParam>> split_params(std::string_view params, std::string_view device) {
    auto parsed = parse_device_params(params);
    if (!parsed.is_ok()) {
        return Status(StatusCode::InvalidArgument, std::string(device) + ": " + parsed.status().message() +
                                                       " (known keys: " + kKnownKeys + ")");
    }
    std::vector<RawParam> out;
    for (DeviceParam& p : parsed.value()) {
        if (p.key == "unsupported") std::replace(p.value.begin(), p.value.end(), ',', '+');
        out.push_back({std::move(p.key), std::move(p.value)});
    }
    return out;
}

Status bad_value(std::string_view device, const RawParam& p, std::string_view expected) {
    return Status(StatusCode::InvalidArgument, std::string(device) + ": " + p.key + "=" + quoted_name(p.value) + " is not " +
                                                   std::string(expected));
}

template <typename T>
std::optional<T> parse_number(std::string_view text) {
    T value{};
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
    return value;
}

std::optional<size_t> parse_size(std::string_view text) {
    size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
    const auto number = parse_number<uint64_t>(text.substr(0, digits));
    if (!number) return std::nullopt;
    std::string_view unit = text.substr(digits);
    int shift = 0;
    if (!unit.empty()) {
        switch (unit[0]) {
            case 'K': case 'k': shift = 10; break;
            case 'M': case 'm': shift = 20; break;
            case 'G': case 'g': shift = 30; break;
            case 'T': case 't': shift = 40; break;
            default: break;
        }
        if (shift != 0) unit.remove_prefix(1);
        if (unit == "iB" || unit == "B") unit = {};
        if (!unit.empty()) return std::nullopt;
    }
    if (*number > (SIZE_MAX >> shift)) return std::nullopt;
    return static_cast<size_t>(*number) << shift;
}

// Adds one op or sub-op name to the filter; false when the name is unknown.
bool add_op_name(OpFilter& filter, std::string_view name) {
    if (const auto op = op_from_name(name)) {
        filter.ops.set(static_cast<size_t>(*op));
    } else if (const auto unary = unary_op_from_name(name)) {
        filter.unary.set(static_cast<size_t>(*unary));
    } else if (const auto glu = glu_op_from_name(name)) {
        filter.glu.set(static_cast<size_t>(*glu));
    } else {
        return false;
    }
    return true;
}

// The non-empty items of "a+b+c".
std::vector<std::string_view> plus_separated(std::string_view list) {
    std::vector<std::string_view> items;
    while (!list.empty()) {
        const size_t plus = list.find('+');
        if (plus != 0) items.push_back(list.substr(0, plus));
        list = plus == std::string_view::npos ? std::string_view{} : list.substr(plus + 1);
    }
    return items;
}

Result<OpFilter> parse_op_filter(std::string_view device, const RawParam& p) {
    OpFilter filter;
    if (p.value.empty() || p.value == "none") return filter;
    for (const std::string_view name : plus_separated(p.value)) {
        if (!add_op_name(filter, name)) {
            return Status(StatusCode::InvalidArgument, std::string(device) + ": unsupported='" + p.value +
                                                           "': '" + std::string(name) +
                                                           "' is not an op name (e.g. rope, get_rows, unary, silu)");
        }
    }
    return filter;
}

FaultTarget parse_fault(const RawParam& p) {
    FaultTarget fault;
    if (p.value.empty() || p.value == "none") return fault;
    for (const std::string_view item : plus_separated(p.value)) {
        if (const auto index = parse_number<int>(item); index && *index >= 0) {
            fault.indices.push_back(*index);
        } else {
            fault.names.emplace_back(item);
        }
    }
    return fault;
}

Status parse_one(std::string_view device, const RawParam& p, SimSettingsUpdate& update) {
    if (p.key == "memory") {
        const auto size = parse_size(p.value);
        if (!size || *size == 0) return bad_value(device, p, "a positive size in bytes (suffixes K, M, G, T)");
        update.memory = *size;
    } else if (p.key == "host_buffer") {
        if (p.value != "0" && p.value != "1") return bad_value(device, p, "0 or 1");
        update.host_buffer = p.value == "1";
    } else if (p.key == "offload_min_batch") {
        const auto n = parse_number<int>(p.value);
        if (!n || *n < 0) return bad_value(device, p, "a non-negative integer (0: never)");
        update.offload_min_batch = *n;
    } else if (p.key == "pageable_ratio") {
        const auto ratio = parse_number<double>(p.value);
        if (!ratio || !(*ratio > 0.0 && *ratio <= 1.0)) return bad_value(device, p, "a number in (0, 1]");
        update.pageable_ratio = *ratio;
    } else if (p.key == "unsupported") {
        XB_ASSIGN_OR_RETURN(update.unsupported, parse_op_filter(device, p));
    } else if (p.key == "threads" || p.key == "n_threads") {
        const auto n = parse_number<int>(p.value);
        if (!n || *n < 1 || *n > kMaxThreads) {
            return bad_value(device, p, "an integer from 1 to " + std::to_string(kMaxThreads));
        }
        update.threads = *n;
    } else if (p.key == "bandwidth_gbps" || p.key == "peer_bandwidth_gbps") {
        const auto gbps = parse_number<double>(p.value);
        if (!gbps || !std::isfinite(*gbps) || *gbps <= 0.0) return bad_value(device, p, "a positive number of GB/s");
        (p.key == "bandwidth_gbps" ? update.bandwidth_gbps : update.peer_bandwidth_gbps) = *gbps;
    } else if (p.key == "latency_us" || p.key == "peer_latency_us") {
        const auto us = parse_number<double>(p.value);
        if (!us || !std::isfinite(*us) || *us < 0.0) return bad_value(device, p, "a non-negative number of microseconds");
        (p.key == "latency_us" ? update.latency_us : update.peer_latency_us) = *us;
    } else if (p.key == "fault_node") {
        update.fault = parse_fault(p);
    } else if (p.key == "fault_size") {
        const auto size = parse_number<double>(p.value);
        if (!size || !(*size > 0.0 && *size <= 1.0)) return bad_value(device, p, "a number above 0 and at most 1");
        update.fault_size = *size;
    } else if (p.key == "fail_alloc" || p.key == "fail_copy") {
        const bool alloc = p.key == "fail_alloc";
        const std::optional<int> n = parse_failure_index(p.value);
        if (!n) {
            return bad_value(device, p, std::string("the index (from 1) of the ") + (alloc ? "allocation" : "copy") + " to fail, or none");
        }
        (alloc ? update.fail_alloc : update.fail_copy) = *n;
    } else {
        return Status(StatusCode::InvalidArgument, std::string(device) + ": unknown parameter '" + p.key +
                                                       "' (known keys: " + kKnownKeys + ")");
    }
    return Status::ok();
}

// Shortest decimal form that reads back as the same double.
std::string format_double(double v) {
    std::array<char, 64> buf{};
    const auto [ptr, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
    return ec == std::errc() ? std::string(buf.data(), ptr) : std::to_string(v);
}

}  // namespace

bool OpFilter::blocks(const Tensor& node) const {
    if (ops.test(static_cast<size_t>(node.op))) return true;
    if (node.op == Op::Unary) {
        const auto sub = static_cast<size_t>(UnaryParams::load(node).op);
        return sub < unary.size() && unary.test(sub);
    }
    if (node.op == Op::Glu) {
        const auto sub = static_cast<size_t>(GluParams::load(node).op);
        return sub < glu.size() && glu.test(sub);
    }
    return false;
}

std::string OpFilter::to_string() const {
    std::string out;
    auto add = [&out](const char* name) { out += (out.empty() ? "" : "+") + std::string(name); };
    for (int i = 0; i < kOpCount; ++i) {
        if (ops.test(static_cast<size_t>(i))) add(op_name(static_cast<Op>(i)));
    }
    for (int i = 0; i < kUnaryOpCount; ++i) {
        if (unary.test(static_cast<size_t>(i))) add(unary_op_name(static_cast<UnaryOp>(i)));
    }
    for (int i = 0; i < kGluOpCount; ++i) {
        if (glu.test(static_cast<size_t>(i))) add(glu_op_name(static_cast<GluOp>(i)));
    }
    return out.empty() ? "none" : out;
}

bool FaultTarget::matches(int node_index, const Tensor& node) const {
    return std::find(indices.begin(), indices.end(), node_index) != indices.end() ||
           std::find(names.begin(), names.end(), node.name) != names.end();
}

std::string FaultTarget::to_string() const {
    std::string out;
    for (const int i : indices) out += (out.empty() ? "" : "+") + std::to_string(i);
    for (const std::string& n : names) out += (out.empty() ? "" : "+") + n;
    return out.empty() ? "none" : out;
}

LinkModel SimSettings::link_for(CopyKind kind, bool pinned) const {
    if (kind == CopyKind::Peer) return peer_link;
    const bool host = kind == CopyKind::HostToDevice || kind == CopyKind::DeviceToHost;
    if (!host || pinned) return link;
    return {link.bandwidth_gbps * pageable_ratio, link.latency_us};
}

void SimSettingsUpdate::apply_to(SimSettings& settings) const {
    if (memory) settings.memory = *memory;
    if (host_buffer) settings.host_buffer = *host_buffer;
    if (offload_min_batch) settings.offload_min_batch = *offload_min_batch;
    if (unsupported) settings.unsupported = *unsupported;
    if (threads) settings.threads = *threads;
    if (bandwidth_gbps) settings.link.bandwidth_gbps = *bandwidth_gbps;
    if (latency_us) settings.link.latency_us = *latency_us;
    if (pageable_ratio) settings.pageable_ratio = *pageable_ratio;
    if (peer_bandwidth_gbps) settings.peer_link.bandwidth_gbps = *peer_bandwidth_gbps;
    if (peer_latency_us) settings.peer_link.latency_us = *peer_latency_us;
    if (fault) settings.fault = *fault;
    if (fault_size) settings.fault_size = *fault_size;
    if (fail_alloc) settings.fail_alloc = *fail_alloc;
    if (fail_copy) settings.fail_copy = *fail_copy;
}

Result<SimSettingsUpdate> parse_sim_params(std::string_view params, std::string_view device) {
    XB_ASSIGN_OR_RETURN(std::vector<RawParam> items, split_params(params, device));
    SimSettingsUpdate update;
    for (const RawParam& p : items) XB_RETURN_IF_ERROR(parse_one(device, p, update));
    return update;
}

std::string format_sim_settings(const SimSettings& s) {
    return "memory=" + format_size(s.memory) + ",host_buffer=" + (s.host_buffer ? "1" : "0") +
           ",offload_min_batch=" + std::to_string(s.offload_min_batch) + ",unsupported=" + s.unsupported.to_string() + ",threads=" + std::to_string(s.threads) +
           ",bandwidth_gbps=" + format_double(s.link.bandwidth_gbps) + ",latency_us=" + format_double(s.link.latency_us) +
           ",pageable_ratio=" + format_double(s.pageable_ratio) +
           ",peer_bandwidth_gbps=" + format_double(s.peer_link.bandwidth_gbps) +
           ",peer_latency_us=" + format_double(s.peer_link.latency_us) + ",fault_node=" + s.fault.to_string() +
           ",fault_size=" + format_double(s.fault_size) +
           ",fail_alloc=" + (s.fail_alloc > 0 ? std::to_string(s.fail_alloc) : std::string("none")) +
           ",fail_copy=" + (s.fail_copy > 0 ? std::to_string(s.fail_copy) : std::string("none"));
}

std::string format_size(size_t bytes) {
    static constexpr std::array<std::pair<int, char>, 4> kUnits = {{{40, 'T'}, {30, 'G'}, {20, 'M'}, {10, 'K'}}};
    for (const auto& [shift, unit] : kUnits) {
        const size_t one = size_t{1} << shift;
        if (bytes >= one && bytes % one == 0) return std::to_string(bytes >> shift) + unit;
    }
    return std::to_string(bytes);
}

}  // namespace xb::sim
