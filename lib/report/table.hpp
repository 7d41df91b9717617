// A table of results and its writers: aligned text for people, JSON, CSV and markdown for
// machines and reviews. Every tool prints through this, so all formats carry the same data.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace xb::report {

enum class Format { Table, Json, Csv, Markdown, Sql };
std::optional<Format> format_from_name(std::string_view name);  // "table", "json", "csv", "md", "sql"

using Cell = std::variant<std::monostate, std::string, int64_t, double, bool>;

class Table {
public:
    explicit Table(std::vector<std::string> columns) : columns_(std::move(columns)) {}

    // Cells in column order; missing trailing cells are empty.
    void add_row(std::vector<Cell> cells);

    const std::vector<std::string>& columns() const { return columns_; }
    const std::vector<std::vector<Cell>>& rows() const { return rows_; }

private:
    std::vector<std::string> columns_;
    std::vector<std::vector<Cell>> rows_;
};

// Text of a cell: doubles with `precision` significant digits ("" for an empty cell).
std::string cell_text(const Cell& cell, int precision = 4);

void write_text(const Table& table, std::ostream& out);      // aligned columns
void write_csv(const Table& table, std::ostream& out);       // RFC 4180 quoting
void write_markdown(const Table& table, std::ostream& out);
// SQL for sqlite3 (as llama-bench's -o sql): CREATE TABLE IF NOT EXISTS `name` with a column per
// table column (INTEGER, REAL or TEXT from its cells), then one INSERT per row; empty and
// non-finite cells are NULL. `sqlite3 results.db < run.sql` appends runs to a database.
void write_sql(const Table& table, std::string_view name, std::ostream& out);
nlohmann::ordered_json to_json(const Table& table);          // an array of objects, one per row
// JSON text of j (indent -1: one line). Strings that are not UTF-8 (names from a config or a
// model file) are written with U+FFFD in place of the bad bytes instead of throwing.
std::string json_text(const nlohmann::ordered_json& j, int indent = -1);
void write_json(const Table& table, std::ostream& out);      // to_json, indented
// Sql writes a table named "results"; call write_sql for another name.
void write(const Table& table, Format format, std::ostream& out);

}  // namespace xb::report
