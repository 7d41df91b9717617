// "/placement": the backends in priority order, weight and node rules, offload_layers, the layer
// split over several devices, the scheduler's options and where host weights live (host_weights). Device names are checked against the registry when the model is built
// (the tools may replace them first).
#include <algorithm>
#include <cmath>

#include "config/config_error.hpp"
#include "config/config_parse_internal.hpp"
#include "core/message_text.hpp"

namespace xb::config::detail {

namespace {

Status parse_backends(const JsonReader& r, const Json& j, PlacementSpec& p) {
    const std::string path = "/placement/backends";
    XB_RETURN_IF_ERROR(r.expect_array(j, path));
    if (j.empty()) return r.error(path, "name at least one backend (device names, highest priority first)");
    p.backends.clear();
    for (size_t i = 0; i < j.size(); ++i) {
        XB_ASSIGN_OR_RETURN(std::string name, r.string(j[i], child_path(path, i)));
        if (name.empty()) return r.error(child_path(path, i), "a device name must not be empty");
        p.backends.push_back(std::move(name));
    }
    p.backends_path = path;
    return Status::ok();
}

Result<std::vector<DeviceRule>> parse_rules(const JsonReader& r, const Json& j, const std::string& path) {
    XB_RETURN_IF_ERROR(r.expect_array(j, path));
    std::vector<DeviceRule> rules;
    for (size_t i = 0; i < j.size(); ++i) {
        const std::string rule_path = child_path(path, i);
        XB_RETURN_IF_ERROR(r.expect_object(j[i], rule_path, {"pattern", "regex", "device"}));
        DeviceRule rule;
        rule.path = rule_path;
        const Json* glob = JsonReader::member(j[i], "pattern");
        const Json* regex = JsonReader::member(j[i], "regex");
        if ((glob == nullptr) == (regex == nullptr)) {
            return r.error(rule_path, "give the names as \"pattern\" (a glob) or as \"regex\" (a regular expression), one of them");
        }
        rule.regex = regex != nullptr;
        XB_ASSIGN_OR_RETURN(rule.pattern, r.string(rule.regex ? *regex : *glob, rule.pattern_path()));
        if (rule.regex) {
            if (const auto problem = DeviceRule::regex_problem(rule.pattern)) {
                return r.error(rule.pattern_path(), quoted_name(rule.pattern) + " is not a regular expression: " + *problem);
            }
        }
        XB_ASSIGN_OR_RETURN(const Json* device, r.required(j[i], rule_path, "device"));
        XB_ASSIGN_OR_RETURN(rule.device, r.string(*device, child_path(rule_path, "device")));
        rules.push_back(std::move(rule));
    }
    return rules;
}

Status parse_scheduler(const JsonReader& r, const Json& j, PlacementSpec& p) {
    const std::string path = "/placement/scheduler";
    XB_RETURN_IF_ERROR(r.expect_object(j, path, {"n_copies", "op_offload"}));
    if (const Json* n = JsonReader::member(j, "n_copies")) {
        XB_ASSIGN_OR_RETURN(const int64_t copies, r.integer_in(*n, child_path(path, "n_copies"), 1, 64));
        p.n_copies = static_cast<int>(copies);
    }
    if (const Json* o = JsonReader::member(j, "op_offload")) {
        XB_ASSIGN_OR_RETURN(p.op_offload, r.boolean(*o, child_path(path, "op_offload")));
    }
    return Status::ok();
}

// "split": {"mode": "layer", "devices": [...], "ratios": [...]}.
Result<SplitSpec> parse_split(const JsonReader& r, const Json& j) {
    SplitSpec s;
    const std::string& path = s.path;
    XB_RETURN_IF_ERROR(r.expect_object(j, path, {"mode", "devices", "ratios"}));
    if (const Json* m = JsonReader::member(j, "mode")) {
        XB_ASSIGN_OR_RETURN(const std::string mode, r.choice(*m, child_path(path, "mode"), {"layer", "row"}));
        s.mode = mode == "row" ? SplitSpec::Mode::Row : SplitSpec::Mode::Layer;
    }
    XB_ASSIGN_OR_RETURN(const Json* devices, r.required(j, path, "devices"));
    const std::string devices_path = child_path(path, "devices");
    XB_RETURN_IF_ERROR(r.expect_array(*devices, devices_path));
    if (devices->empty()) return r.error(devices_path, "name at least one device to split the layers over");
    for (size_t i = 0; i < devices->size(); ++i) {
        XB_ASSIGN_OR_RETURN(std::string name, r.string((*devices)[i], child_path(devices_path, i)));
        if (std::find(s.devices.begin(), s.devices.end(), name) != s.devices.end()) {
            return r.error(child_path(devices_path, i), "device " + quoted_name(name) + " is listed twice");
        }
        s.devices.push_back(std::move(name));
    }
    s.ratios.assign(s.devices.size(), 1.0);
    if (const Json* ratios = JsonReader::member(j, "ratios")) {
        const std::string ratios_path = child_path(path, "ratios");
        XB_RETURN_IF_ERROR(r.expect_array(*ratios, ratios_path));
        if (ratios->size() != s.devices.size()) {
            return r.error(ratios_path, "give one ratio per device: " + std::to_string(s.devices.size()) + " devices, " +
                                            std::to_string(ratios->size()) + " ratios");
        }
        double total = 0;
        for (size_t i = 0; i < ratios->size(); ++i) {
            XB_ASSIGN_OR_RETURN(const double v, r.number((*ratios)[i], child_path(ratios_path, i)));
            if (!(v >= 0) || !std::isfinite(v)) {
                const Json& given = (*ratios)[i];
                return r.error(child_path(ratios_path, i), "ratio " + name_text(given.is_string() ? given.get<std::string>() : given.dump()) +
                                                               " is out of range: a ratio is a finite number of at least 0");
            }
            s.ratios[i] = v;
            total += v;
        }
        if (total <= 0) return r.error(ratios_path, "at least one ratio must be positive");
    }
    return s;
}

Status parse_host_weights(const JsonReader& r, const Json& j, PlacementSpec& p) {
    Result<std::string> kind = r.choice(j, "/placement/host_weights", {"pinned", "pageable"});
    if (!kind.is_ok()) return kind.status();
    p.host_weights = *kind == "pageable" ? HostWeights::Pageable : HostWeights::Pinned;
    return Status::ok();
}

}  // namespace

Status parse_placement(const JsonReader& r, const Json& j, ConfigSpec& spec) {
    PlacementSpec& p = spec.placement;
    XB_RETURN_IF_ERROR(r.expect_object(j, "/placement", {"backends", "weights", "offload_layers", "split", "nodes", "scheduler",
                                                         "host_weights"}));
    if (const Json* b = JsonReader::member(j, "backends")) XB_RETURN_IF_ERROR(parse_backends(r, *b, p));
    if (const Json* w = JsonReader::member(j, "weights")) {
        XB_ASSIGN_OR_RETURN(p.weights, parse_rules(r, *w, "/placement/weights"));
    }
    if (const Json* n = JsonReader::member(j, "nodes")) {
        XB_ASSIGN_OR_RETURN(p.nodes, parse_rules(r, *n, "/placement/nodes"));
    }
    if (const Json* o = JsonReader::member(j, "offload_layers")) {
        p.offload_path = "/placement/offload_layers";
        if (!spec.model) {
            return r.error(p.offload_path, "offload_layers needs a model builder; place the weights of an explicit graph "
                                           "with \"weights\" patterns");
        }
        XB_ASSIGN_OR_RETURN(const int64_t n, r.integer_in(*o, p.offload_path, 0, 1 << 20));
        p.offload_layers = static_cast<int>(n);
    }
    if (const Json* s = JsonReader::member(j, "split")) {
        if (!spec.model) {
            return r.error("/placement/split", "split needs a model builder (it shares the builder's layers); place the "
                                               "weights of an explicit graph with \"weights\" patterns");
        }
        XB_ASSIGN_OR_RETURN(p.split, parse_split(r, *s));
    }
    if (const Json* s = JsonReader::member(j, "scheduler")) XB_RETURN_IF_ERROR(parse_scheduler(r, *s, p));
    if (const Json* h = JsonReader::member(j, "host_weights")) XB_RETURN_IF_ERROR(parse_host_weights(r, *h, p));
    return Status::ok();
}

}  // namespace xb::config::detail
