#include "test_mode.hpp"

#include <iostream>
#include <map>

#include "check.hpp"
#include "progress.hpp"
#include "workers.hpp"

namespace xb::tools::opcheck {

namespace {

struct Counts {
    int passed = 0;
    int failed = 0;
    int unsupported = 0;

    void add(Verdict v) { (v == Verdict::Ok ? passed : v == Verdict::Fail ? failed : unsupported) += 1; }
};

report::Cell number(const std::optional<double>& v) { return v ? report::Cell(*v) : report::Cell(); }
nlohmann::ordered_json json_number(const std::optional<double>& v) { return v ? nlohmann::ordered_json(*v) : nullptr; }

report::Table table_of(const std::vector<CheckRow>& rows) {
    report::Table t({"backend", "case", "op", "type", "status", "nmse", "nmse_ref", "max_abs", "tolerance", "detail"});
    for (const CheckRow& r : rows) {
        t.add_row({r.backend, r.c->source->name, r.c->op, r.c->type, std::string(verdict_name(r.verdict)),
                   number(r.nmse), number(r.nmse_ref), number(r.max_abs), r.tolerance, r.detail});
    }
    return t;
}

nlohmann::ordered_json json_of(const std::vector<CheckRow>& rows, size_t n_cases,
                               const std::vector<std::string>& backends) {
    Counts all;
    std::map<std::string, Counts> by_backend;
    nlohmann::ordered_json failing = nlohmann::ordered_json::array();
    nlohmann::ordered_json results = nlohmann::ordered_json::array();
    for (const CheckRow& r : rows) {
        all.add(r.verdict);
        by_backend[r.backend].add(r.verdict);
        if (r.verdict == Verdict::Fail) {
            failing.push_back(
                {{"backend", r.backend}, {"case", r.c->source->name}, {"op", r.c->op}, {"reason", r.detail}});
        }
        results.push_back({{"backend", r.backend}, {"case", r.c->source->name}, {"op", r.c->op}, {"type", r.c->type},
                           {"status", verdict_name(r.verdict)}, {"nmse", json_number(r.nmse)},
                           {"nmse_ref", json_number(r.nmse_ref)}, {"max_abs", json_number(r.max_abs)},
                           {"tolerance", r.tolerance}, {"detail", r.detail}});
    }
    nlohmann::ordered_json per = nlohmann::ordered_json::object();
    for (const std::string& b : backends) {
        const Counts& c = by_backend[b];
        per[b] = {{"passed", c.passed}, {"failed", c.failed}, {"unsupported", c.unsupported}};
    }
    return {{"tool", kTool},   {"mode", "test"},         {"reference", "CPU"},       {"backends", backends},
            {"cases", n_cases}, {"checks", rows.size()}, {"passed", all.passed},     {"failed", all.failed},
            {"unsupported", all.unsupported}, {"failing", failing}, {"by_backend", per}, {"results", results}};
}

// The summary for people, on stderr: counts per backend, then every failing case by name.
void print_summary(const nlohmann::ordered_json& j) {
    for (const auto& [name, c] : j["by_backend"].items()) {
        std::cerr << kTool << ": " << name << " against CPU: " << c["passed"] << " passed, " << c["failed"]
                  << " failed, " << c["unsupported"] << " unsupported\n";
    }
    if (j["failing"].empty()) return;
    std::cerr << "failing cases:\n";
    for (const auto& f : j["failing"]) {
        std::cerr << "  " << f["backend"].get<std::string>() << " " << f["case"].get<std::string>() << ": "
                  << f["reason"].get<std::string>() << '\n';
    }
}

}  // namespace

int run_test_mode(const OpCheckOptions& o, const std::vector<SelectedCase>& cases,
                  const std::vector<std::string>& backends) {
    const uint64_t seed = o.common.seed.value_or(0);
    std::vector<std::vector<CheckRow>> per_case(cases.size());
    Progress progress("checking case", static_cast<long>(cases.size()));
    const Status s = parallel_for<WorkerBackends>(
        cases.size(), o.jobs, [&] { return make_worker_backends(backends, o.jobs, o.common.threads); },
        [&](WorkerBackends& b, size_t i) { per_case[i] = check_case(b, cases[i], seed); },
        [&](size_t done) { progress.update(static_cast<long>(done)); });
    if (!s.is_ok()) return fail(kTool, s);
    std::vector<CheckRow> rows;
    for (auto& r : per_case) rows.insert(rows.end(), r.begin(), r.end());
    const nlohmann::ordered_json j = json_of(rows, cases.size(), backends);
    if (Status w = write_report(table_of(rows), j, o.common); !w.is_ok()) return fail(kTool, w);
    print_summary(j);
    return j["failed"].get<int>() == 0 ? kExitOk : kExitCheckFailed;
}

}  // namespace xb::tools::opcheck
