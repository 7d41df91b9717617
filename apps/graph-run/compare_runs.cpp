#include "compare_runs.hpp"

#include <fstream>
#include <map>

#include "cli.hpp"
#include "core/file_io.hpp"

namespace xb::tools {

namespace {

using Json = nlohmann::ordered_json;

struct SavedReport {
    std::vector<Json> runs;
    Json meta;
};

bool is_run(const Json& j) { return j.is_object() && j.contains("time_ms") && j["time_ms"].is_object(); }

Result<SavedReport> read_report(const std::string& path) {
    XB_ASSIGN_OR_RETURN(std::ifstream in, open_for_reading(path, "report (--compare)"));
    Json j = Json::parse(in, nullptr, /*allow_exceptions=*/false);
    SavedReport r;
    if (j.is_object()) r.meta = j.value("meta", Json());
    if (j.is_object() && j.contains("runs") && j["runs"].is_array()) {
        for (const Json& run : j["runs"]) {
            if (is_run(run)) r.runs.push_back(run);
        }
    } else if (is_run(j)) {  // one run at the top level
        j.erase("meta");
        r.runs.push_back(std::move(j));
    }
    if (r.runs.empty()) {
        return Status(StatusCode::InvalidArgument,
                      "--compare: " + path + " is not a graph-run JSON report (make one with graph-run --format json -o FILE)");
    }
    return r;
}

std::string text_of(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// "configs/default.json pp8 SIM0,CPU t2": what pairs runs across the two reports (reports from
// before the test column pair by the rest). Without the threads ("... SIM0,CPU"): graph-run lowers
// its thread count on a busy machine, so two runs of the same matrix may differ in it alone.
std::string run_key(const Json& run, bool with_threads = true) {
    std::vector<std::string> backends;
    for (const Json& b : run.value("backends", Json::array())) backends.push_back(text_of(b));
    const std::string test = text_of(run.value("test", Json("")));
    const std::string key = text_of(run.value("config", Json(""))) + (test.empty() ? "" : " " + test) + " " + join_list(backends);
    return with_threads ? key + " t" + text_of(run.value("threads", Json(0))) : key;
}

double number_at(const Json& run, const char* key, const char* sub = nullptr) {
    const Json* v = run.contains(key) ? &run[key] : nullptr;
    if (v != nullptr && sub != nullptr) v = v->is_object() && v->contains(sub) ? &(*v)[sub] : nullptr;
    return v != nullptr && v->is_number() ? v->get<double>() : 0.0;
}

// Every number of a run as "a.b" -> value, in the run's order.
void flatten(const Json& j, const std::string& prefix, std::vector<std::pair<std::string, Json>>& out) {
    for (const auto& [key, value] : j.items()) {
        if (key == "meta" || key == "profile") continue;
        const std::string name = prefix.empty() ? key : prefix + "." + key;
        if (value.is_object()) {
            flatten(value, name, out);
        } else if (value.is_number()) {
            out.emplace_back(name, value);
        }
    }
}

void add_metrics(const std::string& run, const Json& base, const Json& now, RunComparison& c, Json& metrics) {
    std::vector<std::pair<std::string, Json>> a, b;
    flatten(base, "", a);
    flatten(now, "", b);
    const std::map<std::string, Json> by_name(b.begin(), b.end());
    for (const auto& [name, base_value] : a) {
        const auto it = by_name.find(name);
        if (it == by_name.end()) continue;
        const double va = base_value.get<double>();
        const double vb = it->second.get<double>();
        metrics.push_back({{"run", run}, {"metric", name}, {"base", va}, {"new", vb},
                           {"ratio", va != 0 ? Json(vb / va) : Json(nullptr)}});
    }
    const double tps_a = number_at(base, "tokens_per_s");
    const double tps_b = number_at(now, "tokens_per_s");
    std::vector<report::Cell> row = {run, tps_a, tps_b, report::Cell{}, number_at(base, "time_ms", "median"),
                                     number_at(now, "time_ms", "median")};
    if (tps_a != 0) row[3] = tps_b / tps_a;  // else left empty
    c.table.add_row(std::move(row));
}

}  // namespace

Result<RunComparison> compare_runs(const std::string& base_path, const std::string& new_path) {
    XB_ASSIGN_OR_RETURN(const SavedReport base, read_report(base_path));
    XB_ASSIGN_OR_RETURN(const SavedReport now, read_report(new_path));
    RunComparison c;
    if (base.meta.is_object() && now.meta.is_object()) {
        for (const char* key : {"commit", "dirty", "build_type", "cpu", "cpu_kernels", "gpus", "seed"}) {
            const Json a = base.meta.value(key, Json());
            const Json b = now.meta.value(key, Json());
            if (a != b) c.differences.push_back(std::string(key) + ": " + text_of(a) + " -> " + text_of(b));
        }
    }
    Json metrics = Json::array();
    if (base.runs.size() == 1 && now.runs.size() == 1) {  // one run each: compared whatever they ran
        const Json& a = base.runs.front();
        const Json& b = now.runs.front();
        for (const char* key : {"config", "model", "test", "backends", "threads"}) {
            if (a.contains(key) && b.contains(key) && a[key] != b[key]) {
                c.differences.push_back(std::string(key) + ": " + text_of(a[key]) + " -> " + text_of(b[key]));
            }
        }
        add_metrics(run_key(a), a, b, c, metrics);
    } else {
        std::map<std::string, const Json*> new_by_key;
        for (const Json& r : now.runs) new_by_key[run_key(r)] = &r;
        std::vector<const Json*> left;  // base runs with no partner of the same threads
        for (const Json& a : base.runs) {
            const std::string key = run_key(a);
            const auto it = new_by_key.find(key);
            if (it == new_by_key.end()) {
                left.push_back(&a);
                continue;
            }
            add_metrics(key, a, *it->second, c, metrics);
            new_by_key.erase(it);
        }
        // Then runs that differ in their threads alone, where that pairs one with one.
        std::map<std::string, std::vector<std::string>> new_keys_by_loose_key;
        for (const auto& [key, run] : new_by_key) new_keys_by_loose_key[run_key(*run, false)].push_back(key);
        for (const Json* a : left) {
            const auto loose = new_keys_by_loose_key.find(run_key(*a, false));
            if (loose == new_keys_by_loose_key.end() || loose->second.size() != 1) {
                c.unpaired.push_back("base: " + run_key(*a));
                continue;
            }
            const Json& b = *new_by_key.at(loose->second.front());
            c.differences.push_back("threads of " + loose->first + ": " + text_of(a->value("threads", Json(0))) + " -> " +
                                    text_of(b.value("threads", Json(0))));
            add_metrics(run_key(*a), *a, b, c, metrics);
            new_by_key.erase(loose->second.front());
            new_keys_by_loose_key.erase(loose);
        }
        for (const auto& [key, run] : new_by_key) c.unpaired.push_back("new: " + key);
        if (metrics.empty()) {
            return Status(StatusCode::InvalidArgument, "no run of " + base_path + " pairs with one of " + new_path +
                                                           " (runs pair by config, test and backends)");
        }
    }
    c.json = {{"base", base_path},
              {"new", new_path},
              {"differences", c.differences},
              {"unpaired", c.unpaired},
              {"metrics", std::move(metrics)}};
    return c;
}

}  // namespace xb::tools
