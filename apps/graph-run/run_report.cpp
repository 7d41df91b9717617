#include "run_report.hpp"

#include <algorithm>
#include <map>
#include <ostream>

#include "backend/row_split_buffer.hpp"
#include "run_metadata.hpp"

namespace xb::tools {

namespace {

constexpr int kSlowestNodes = 10;

std::string backends_text(const nlohmann::ordered_json& row) { return join_list(row["backends"].get<std::vector<std::string>>()); }

// "1.2B", "125M", "30K": a parameter count as llama-bench prints a model's size.
std::string count_text(double n) {
    const char* units[] = {"", "K", "M", "B", "T"};
    int u = 0;
    while (n >= 1000.0 && u < 4) {
        n /= 1000.0;
        ++u;
    }
    return report::cell_text(n, n >= 100.0 ? 3 : 2) + units[u];
}

// What the model is, as llama-bench's model column says it: its name, parameters and, for a llama.cpp
// model file, the file's type as llama.cpp names it ("gemma-3-270m 268M Q4_K - Medium"); for other
// graphs the type that holds most of its weight bytes ("llama-decoder 1.1B q4_K").
std::string model_label(const config::Model& m) {
    double params = 0;
    std::map<std::string, size_t> bytes_by_type;
    for (const Tensor* w : m.weights) {
        params += static_cast<double>(w->nelements());
        bytes_by_type[dtype_name(w->type)] += w->nbytes();
    }
    if (m.weights.empty()) return m.name;
    const auto most = std::max_element(bytes_by_type.begin(), bytes_by_type.end(),
                                       [](const auto& a, const auto& b) { return a.second < b.second; });
    return m.name + " " + count_text(params) + " " + (m.file_type.empty() ? most->first : m.file_type);
}

// One row per run; `counts` adds llama-bench's n_prompt, n_gen and n_depth (its sql table's), so
// that rows of both tools can be joined.
report::Table runs_table(const std::vector<RunRecord>& runs, bool counts = false) {
    std::vector<std::string> columns = {"config", "model", "test"};
    if (counts) columns.insert(columns.end(), {"n_prompt", "n_gen", "n_depth"});
    columns.insert(columns.end(), {"backends", "threads", "splits", "median_ms", "stddev_ms", "min_ms", "tokens_per_s", "gflops",
                                   "copied_bytes"});
    report::Table t(columns);
    for (const RunRecord& r : runs) {
        const nlohmann::ordered_json& j = r.row;
        const nlohmann::ordered_json& ms = j["time_ms"];
        std::vector<report::Cell> row = {j["config"].get<std::string>(), j["model"].get<std::string>(), j["test"].get<std::string>()};
        if (counts) row.insert(row.end(), {j["n_prompt"].get<int64_t>(), j["n_gen"].get<int64_t>(), j["n_depth"].get<int64_t>()});
        row.insert(row.end(), {backends_text(j), j["threads"].get<int64_t>(), j["n_splits"].get<int64_t>(), ms["median"].get<double>(),
                               ms["stddev"].get<double>(), ms["min"].get<double>(), j["tokens_per_s"].get<double>(),
                               j["gflops"].get<double>(), j["copy_bytes"].get<int64_t>()});
        t.add_row(std::move(row));
    }
    return t;
}

nlohmann::ordered_json with_profile(const RunRecord& r) {
    nlohmann::ordered_json row = r.row;
    if (r.profile) row["profile"] = profile_json(*r.profile);
    return row;
}

// The runs table, then for each profiled run its per-op and slowest-node tables under a title.
void write_tables(const std::vector<RunRecord>& runs, report::Format format, std::ostream& out) {
    report::write(runs_table(runs), format, out);
    for (const RunRecord& r : runs) {
        if (!r.profile) continue;
        const std::string run = r.row["config"].get<std::string>() + " on " + backends_text(r.row) + ", " +
                                threads_text(r.row["threads"].get<int>());
        const std::string note = " (node by node, median of " + std::to_string(r.profile->reps) + "; sum " +
                                 report::cell_text(r.profile->sum_us() * 1e-3) + " ms against " +
                                 report::cell_text(r.row["time_ms"]["median"].get<double>()) +
                                 " ms computed whole: one launch and synchronisation per node)";
        const char* heading = format == report::Format::Markdown ? "\n#### " : "\n";
        out << heading << "Time per op: " << run << note << "\n\n";
        report::write(op_table(*r.profile), format, out);
        out << heading << "Slowest nodes: " << run << "\n\n";
        report::write(slowest_nodes_table(*r.profile, kSlowestNodes), format, out);
    }
}

}  // namespace

nlohmann::ordered_json run_row(Session& s, const report::TimingStats& t, const CommonOptions& run, const TestLabel& test,
                               const MachineLoad& load) {
    const SchedReport& r = s.sched->report();
    // A repetition computes the graph once, or once per generated token.
    const int64_t tokens = test.n_gen > 0 ? test.n_gen : s.model.n_tokens;
    const double computes = test.n_gen > 0 ? test.n_gen : 1;
    nlohmann::ordered_json buffers = nlohmann::ordered_json::object();
    for (const auto& b : s.backends) buffers[b->name()] = s.sched->buffer_size(*b);
    size_t copy_bytes = 0;
    nlohmann::ordered_json pairs = nlohmann::ordered_json::object();
    for (const auto& [pair, bytes] : r.copy_bytes) {
        copy_bytes += bytes;
        pairs[pair.first + "->" + pair.second] = bytes;
    }
    // A row split's copies happen inside the main device's backend, out of the scheduler's sight.
    for (const auto& [pair, c] : row_split_copies(s.model.graph)) {
        copy_bytes += c.bytes;
        pairs[pair.first + "->" + pair.second + " (row split)"] = c.bytes;
    }
    return {{"config", run.config},
            {"model", model_label(s.model)},
            {"test", test.name},
            {"n_prompt", test.n_prompt},
            {"n_gen", test.n_gen},
            {"n_depth", test.n_depth},
            {"n_tokens", tokens},
            {"backends", s.backend_names()},
            {"threads", run.threads},
            {"n_nodes", s.model.graph.n_nodes()},
            {"n_splits", s.sched->n_splits()},
            {"reps", t.count},
            {"time_ms", {{"min", t.min}, {"median", t.median}, {"mean", t.mean}, {"p90", t.p90}, {"p95", t.p95},
                         {"p99", t.p99}, {"max", t.max}, {"stddev", t.stddev}}},
            {"tokens_per_s", t.median > 0 ? static_cast<double>(tokens) / (t.median * 1e-3) : 0.0},
            {"gflops", t.median > 0 ? s.model.matmul_flops * computes / (t.median * 1e-3) * 1e-9 : 0.0},
            {"buffer_bytes", buffers},
            {"copy_bytes", copy_bytes},
            {"copy_bytes_by_pair", pairs},
            {"others_running", load.others_running}};
}

Status write_runs(const std::vector<RunRecord>& runs, const CommonOptions& o) {
    if (o.format == "json") {
        nlohmann::ordered_json rows = nlohmann::ordered_json::array();
        for (const RunRecord& r : runs) rows.push_back(with_profile(r));
        const nlohmann::ordered_json doc = {{"runs", std::move(rows)}, {"meta", run_metadata(o)}};
        return write_output(o, [&](std::ostream& out) { out << report::json_text(doc, 2) << '\n'; });
    }
    if (o.format == "jsonl") {
        return write_output(o, [&](std::ostream& out) {
            for (const RunRecord& r : runs) {
                nlohmann::ordered_json line = with_profile(r);
                line["meta"] = run_metadata(r.options);
                out << report::json_text(line) << '\n';
            }
        });
    }
    const report::Format format = report::format_from_name(o.format).value_or(report::Format::Table);
    // One table: per-node figures are in json. SQL as llama-bench writes it: a graph_run table.
    if (format == report::Format::Csv) return write_table(runs_table(runs), o);
    if (format == report::Format::Sql) {
        return write_output(o, [&](std::ostream& out) { report::write_sql(runs_table(runs, true), "graph_run", out); });
    }
    return write_output(o, [&](std::ostream& out) { write_tables(runs, format, out); });
}

}  // namespace xb::tools
