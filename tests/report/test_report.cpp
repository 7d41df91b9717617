// Report writers, error metrics and timing statistics.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "report/metrics.hpp"
#include "report/table.hpp"
#include "report/timing.hpp"

namespace xb::report {
namespace {

Table sample_table() {
    Table t({"node", "op", "nmse", "ok"});
    t.add_row({std::string("attn_q"), std::string("mul_mat"), 1.5e-7, true});
    t.add_row({std::string("a,\"b\""), std::string("add"), std::numeric_limits<double>::infinity(), false});
    t.add_row({std::string("short")});
    return t;
}

TEST(ReportTable, FormatsCarryTheSameData) {
    const Table t = sample_table();
    std::ostringstream json, csv, md, text;
    write(t, Format::Json, json);
    write(t, Format::Csv, csv);
    write(t, Format::Markdown, md);
    write(t, Format::Table, text);
    const auto parsed = nlohmann::json::parse(json.str());
    ASSERT_EQ(parsed.size(), 3u);
    EXPECT_EQ(parsed[0]["node"], "attn_q");
    EXPECT_DOUBLE_EQ(parsed[0]["nmse"].get<double>(), 1.5e-7);
    EXPECT_EQ(parsed[1]["nmse"], "inf") << "non-finite numbers become strings: JSON has none";
    EXPECT_TRUE(parsed[2]["op"].is_null());
    EXPECT_NE(csv.str().find("\"a,\"\"b\"\"\""), std::string::npos) << "RFC 4180 quoting";
    EXPECT_EQ(md.str().substr(0, 25), "| node | op | nmse | ok |");
    std::istringstream lines(text.str());
    std::string header, rule;
    std::getline(lines, header);
    std::getline(lines, rule);
    EXPECT_EQ(header.size(), rule.size()) << "columns are aligned";
    EXPECT_TRUE(format_from_name("md").has_value());
    EXPECT_FALSE(format_from_name("xml").has_value());
}

// SQL as sqlite3 reads it: typed columns, quoted strings (a quote doubled), NULL for empty and
// non-finite cells, identifiers made of letters, digits and underscores.
TEST(ReportTable, SqlCreatesATypedTableAndInsertsEachRow) {
    report::Table t({"name", "new/base", "count", "ok"});
    t.add_row({std::string("it's"), 1.5, int64_t{3}, true});
    t.add_row({std::string("b"), std::numeric_limits<double>::infinity(), int64_t{-2}});
    std::ostringstream out;
    report::write_sql(t, "graph run", out);
    EXPECT_EQ(out.str(),
              "CREATE TABLE IF NOT EXISTS graph_run (\n"
              "  name TEXT,\n"
              "  new_base REAL,\n"
              "  count INTEGER,\n"
              "  ok INTEGER\n"
              ");\n"
              "INSERT INTO graph_run (name, new_base, count, ok) VALUES ('it''s', 1.5, 3, 1);\n"
              "INSERT INTO graph_run (name, new_base, count, ok) VALUES ('b', NULL, -2, NULL);\n");
    EXPECT_EQ(report::format_from_name("sql"), report::Format::Sql);
}

TEST(ReportMetrics, MatchDefinitions) {
    std::mt19937 rng(3);
    std::normal_distribution<float> dist;
    std::vector<float> ref(1000), same(1000), doubled(1000), noisy(1000);
    double err2 = 0, ref2 = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        ref[i] = dist(rng);
        same[i] = ref[i];
        doubled[i] = 2 * ref[i];
        noisy[i] = ref[i] + 0.01f * dist(rng);
        err2 += (static_cast<double>(noisy[i]) - ref[i]) * (static_cast<double>(noisy[i]) - ref[i]);
        ref2 += static_cast<double>(ref[i]) * ref[i];
    }
    const ErrorMetrics s = compare(same, ref);
    EXPECT_EQ(s.nmse, 0.0);
    EXPECT_NEAR(s.cosine, 1.0, 1e-12);
    const ErrorMetrics d = compare(doubled, ref);
    EXPECT_NEAR(d.nmse, 1.0, 1e-12) << "error equals the reference";
    EXPECT_NEAR(d.cosine, 1.0, 1e-12) << "same direction";
    EXPECT_NEAR(compare(noisy, ref).nmse, err2 / ref2, 1e-15);

    std::vector<float> a = {1, -INFINITY, NAN, 2, INFINITY};
    std::vector<float> b = {1, -INFINITY, NAN, NAN, 3};
    const ErrorMetrics m = compare(a, b);
    EXPECT_EQ(m.nan_count, 1);
    EXPECT_EQ(m.inf_mismatch, 1);
    EXPECT_EQ(m.nmse, 0.0) << "matching infinities and NaNs are equal";
    EXPECT_EQ(m.worst_index, 3) << "the first NaN mismatch is the worst element";
    EXPECT_TRUE(std::isnan(m.worst_reference));

    // Otherwise the largest difference, with both values; none when all match.
    std::vector<float> near = ref;
    near[17] += 0.5f;
    near[400] -= 2.0f;
    const ErrorMetrics w = compare(near, ref);
    EXPECT_EQ(w.worst_index, 400);
    EXPECT_EQ(w.worst_value, near[400]);
    EXPECT_EQ(w.worst_reference, ref[400]);
    EXPECT_EQ(s.worst_index, -1);
}

TEST(ReportTiming, PercentilesOfAKnownSample) {
    std::vector<double> v;
    for (int i = 101; i >= 1; --i) v.push_back(i);  // unsorted on purpose
    const TimingStats s = summarize(v);
    EXPECT_EQ(s.count, 101);
    EXPECT_EQ(s.min, 1);
    EXPECT_EQ(s.max, 101);
    EXPECT_EQ(s.median, 51);
    EXPECT_EQ(s.p90, 91);
    EXPECT_DOUBLE_EQ(s.mean, 51);
    double var = 0;
    for (double x : v) var += (x - 51) * (x - 51);
    EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(var / 100));
    EXPECT_EQ(summarize({}).count, 0);
}

}  // namespace
}  // namespace xb::report
