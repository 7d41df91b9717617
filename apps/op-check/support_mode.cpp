#include "support_mode.hpp"

#include <map>
#include <utility>

#include "backend/registry.hpp"
#include "builtin/builtin_backends.hpp"
#include "opcheck/case_graph.hpp"

namespace xb::tools::opcheck {

namespace {

using xb::opcheck::CaseGraph;

// Per (op, type): how many cases, and per backend how many of them it supports.
struct Support {
    int cases = 0;
    std::vector<int> supported;  // per backend
};
using SupportMap = std::map<std::pair<std::string, std::string>, Support>;

// "yes" (every case), "no" (none), or "k/n" (some: a layout or shape the device refuses).
std::string answer(int supported, int cases) {
    if (supported == cases) return "yes";
    if (supported == 0) return "no";
    return std::to_string(supported) + "/" + std::to_string(cases);
}

Result<SupportMap> survey(const std::vector<SelectedCase>& cases, const std::vector<const Device*>& devices) {
    SupportMap map;
    for (const SelectedCase& c : cases) {
        XB_ASSIGN_OR_RETURN(CaseGraph graph, CaseGraph::build(*c.source));
        Support& s = map[{c.op, c.type}];
        s.supported.resize(devices.size());
        ++s.cases;
        for (size_t d = 0; d < devices.size(); ++d) s.supported[d] += graph.unsupported_on(*devices[d]).empty() ? 1 : 0;
    }
    return map;
}

}  // namespace

int run_support_mode(const OpCheckOptions& o, const std::vector<SelectedCase>& cases,
                     const std::vector<std::string>& backends) {
    std::vector<const Device*> devices;
    for (const std::string& name : backends) devices.push_back(global_registry().dev_by_name(name));
    auto map = survey(cases, devices);
    if (!map.is_ok()) return fail(kTool, map.status());
    std::vector<std::string> columns = {"op", "type", "cases"};
    columns.insert(columns.end(), backends.begin(), backends.end());
    report::Table table(columns);
    nlohmann::ordered_json results = nlohmann::ordered_json::array();
    for (const auto& [key, s] : *map) {
        std::vector<report::Cell> row = {key.first, key.second, static_cast<int64_t>(s.cases)};
        nlohmann::ordered_json j = {{"op", key.first}, {"type", key.second}, {"cases", s.cases}};
        for (size_t d = 0; d < devices.size(); ++d) {
            row.emplace_back(answer(s.supported[d], s.cases));
            j[backends[d]] = answer(s.supported[d], s.cases);
        }
        table.add_row(std::move(row));
        results.push_back(std::move(j));
    }
    const nlohmann::ordered_json doc = {
        {"tool", kTool}, {"mode", "support"}, {"backends", backends}, {"results", results}};
    if (Status w = write_report(table, doc, o.common); !w.is_ok()) return fail(kTool, w);
    return kExitOk;
}

}  // namespace xb::tools::opcheck
