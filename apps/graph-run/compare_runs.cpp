#include "compare_runs.hpp"

#include <fstream>
#include <map>

namespace xb::tools {

namespace {

Result<nlohmann::ordered_json> read_report(const std::string& path) {
    std::ifstream in(path);
    if (!in) return Status(StatusCode::InvalidArgument, "--compare: cannot read " + path);
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("time_ms") || !j["time_ms"].is_object()) {
        return Status(StatusCode::InvalidArgument,
                      "--compare: " + path + " is not a graph-run JSON report (make one with graph-run --format json -o FILE)");
    }
    return j;
}

// Every number of the report as "a.b" -> value, in the report's order; the run's metadata is
// compared separately.
void flatten(const nlohmann::ordered_json& j, const std::string& prefix,
             std::vector<std::pair<std::string, nlohmann::ordered_json>>& out) {
    for (const auto& [key, value] : j.items()) {
        if (prefix.empty() && key == "meta") continue;
        const std::string name = prefix.empty() ? key : prefix + "." + key;
        if (value.is_object()) {
            flatten(value, name, out);
        } else if (value.is_number()) {
            out.emplace_back(name, value);
        }
    }
}

std::string text_of(const nlohmann::ordered_json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace

Result<RunComparison> compare_runs(const std::string& base_path, const std::string& new_path) {
    XB_ASSIGN_OR_RETURN(const nlohmann::ordered_json base, read_report(base_path));
    XB_ASSIGN_OR_RETURN(const nlohmann::ordered_json now, read_report(new_path));
    RunComparison c;
    for (const char* key : {"config", "model", "backends"}) {
        if (base.contains(key) && now.contains(key) && base[key] != now[key]) {
            c.notes.push_back(std::string(key) + ": " + text_of(base[key]) + " -> " + text_of(now[key]));
        }
    }
    if (base.contains("meta") && now.contains("meta")) {
        for (const char* key : {"commit", "dirty", "build_type", "cpu", "cpu_kernels", "threads", "gpus", "seed", "config"}) {
            const nlohmann::ordered_json& a = base["meta"].value(key, nlohmann::ordered_json());
            const nlohmann::ordered_json& b = now["meta"].value(key, nlohmann::ordered_json());
            if (a != b) c.notes.push_back(std::string(key) + ": " + text_of(a) + " -> " + text_of(b));
        }
    }
    std::vector<std::pair<std::string, nlohmann::ordered_json>> a, b;
    flatten(base, "", a);
    flatten(now, "", b);
    const std::map<std::string, nlohmann::ordered_json> by_name(b.begin(), b.end());
    // Counts stay integers in the table; everything else is a double.
    auto cell = [](const nlohmann::ordered_json& v) {
        return v.is_number_integer() ? report::Cell(v.get<int64_t>()) : report::Cell(v.get<double>());
    };
    nlohmann::ordered_json metrics = nlohmann::ordered_json::array();
    for (const auto& [name, base_value] : a) {
        const auto it = by_name.find(name);
        if (it == by_name.end()) continue;
        const double va = base_value.get<double>();
        const double vb = it->second.get<double>();
        std::vector<report::Cell> row = {name, cell(base_value), cell(it->second)};
        if (va != 0) row.emplace_back(vb / va);  // else left empty
        c.table.add_row(std::move(row));
        metrics.push_back({{"metric", name}, {"base", va}, {"new", vb},
                           {"ratio", va != 0 ? nlohmann::ordered_json(vb / va) : nlohmann::ordered_json(nullptr)}});
    }
    c.json = {{"base", base_path}, {"new", new_path}, {"differences", c.notes}, {"metrics", std::move(metrics)}};
    return c;
}

}  // namespace xb::tools
