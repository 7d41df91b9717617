// "/placement": the backends in priority order, weight and node rules, offload_layers and the
// scheduler's options. Device names are checked against the registry when the model is built
// (the tools may replace them first).
#include "config/config_error.hpp"
#include "config/config_parse_internal.hpp"

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
        XB_RETURN_IF_ERROR(r.expect_object(j[i], rule_path, {"pattern", "device"}));
        DeviceRule rule;
        rule.path = rule_path;
        XB_ASSIGN_OR_RETURN(const Json* pattern, r.required(j[i], rule_path, "pattern"));
        XB_ASSIGN_OR_RETURN(rule.pattern, r.string(*pattern, child_path(rule_path, "pattern")));
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

}  // namespace

Status parse_placement(const JsonReader& r, const Json& j, ConfigSpec& spec) {
    PlacementSpec& p = spec.placement;
    XB_RETURN_IF_ERROR(r.expect_object(j, "/placement", {"backends", "weights", "offload_layers", "nodes", "scheduler"}));
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
    if (const Json* s = JsonReader::member(j, "scheduler")) XB_RETURN_IF_ERROR(parse_scheduler(r, *s, p));
    return Status::ok();
}

}  // namespace xb::config::detail
