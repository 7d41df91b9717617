#include "report/table.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace xb::report {

std::optional<Format> format_from_name(std::string_view name) {
    if (name == "table") return Format::Table;
    if (name == "json") return Format::Json;
    if (name == "csv") return Format::Csv;
    if (name == "md" || name == "markdown") return Format::Markdown;
    if (name == "sql") return Format::Sql;
    return std::nullopt;
}

void Table::add_row(std::vector<Cell> cells) {
    cells.resize(columns_.size());
    rows_.push_back(std::move(cells));
}

std::string cell_text(const Cell& cell, int precision) {
    struct Visitor {
        int precision;
        std::string operator()(std::monostate) const { return ""; }
        std::string operator()(const std::string& s) const { return s; }
        std::string operator()(int64_t v) const { return std::to_string(v); }
        std::string operator()(bool v) const { return v ? "yes" : "no"; }
        std::string operator()(double v) const {
            if (std::isnan(v)) return "nan";
            if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
            char buf[64];
            std::snprintf(buf, sizeof buf, "%.*g", precision, v);
            return buf;
        }
    };
    return std::visit(Visitor{precision}, cell);
}

namespace {

// Columns a text takes on a terminal: its UTF-8 code points (a name such as "Δp" is 3 bytes, 2 wide).
size_t display_width(const std::string& text) {
    size_t width = 0;
    for (const char ch : text) width += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
    return width;
}

}  // namespace

void write_text(const Table& table, std::ostream& out) {
    const size_t n = table.columns().size();
    std::vector<size_t> width(n);
    for (size_t c = 0; c < n; ++c) width[c] = display_width(table.columns()[c]);
    for (const auto& row : table.rows()) {
        for (size_t c = 0; c < n; ++c) width[c] = std::max(width[c], display_width(cell_text(row[c])));
    }
    auto line = [&](auto text_of) {
        for (size_t c = 0; c < n; ++c) {
            const std::string t = text_of(c);
            out << t << std::string(width[c] - display_width(t) + (c + 1 < n ? 2 : 0), ' ');
        }
        out << '\n';
    };
    line([&](size_t c) { return table.columns()[c]; });
    line([&](size_t c) { return std::string(width[c], '-'); });
    for (const auto& row : table.rows()) line([&](size_t c) { return cell_text(row[c]); });
}

namespace {
std::string csv_field(const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
}
}  // namespace

void write_csv(const Table& table, std::ostream& out) {
    auto line = [&](auto text_of) {
        for (size_t c = 0; c < table.columns().size(); ++c) out << (c ? "," : "") << csv_field(text_of(c));
        out << '\n';
    };
    line([&](size_t c) { return table.columns()[c]; });
    for (const auto& row : table.rows()) line([&](size_t c) { return cell_text(row[c], 9); });
}

void write_markdown(const Table& table, std::ostream& out) {
    auto line = [&](auto text_of) {
        out << '|';
        for (size_t c = 0; c < table.columns().size(); ++c) out << ' ' << text_of(c) << " |";
        out << '\n';
    };
    line([&](size_t c) { return table.columns()[c]; });
    line([&](size_t) { return std::string("---"); });
    for (const auto& row : table.rows()) line([&](size_t c) { return cell_text(row[c]); });
}

nlohmann::ordered_json to_json(const Table& table) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const auto& row : table.rows()) {
        nlohmann::ordered_json obj = nlohmann::ordered_json::object();
        for (size_t c = 0; c < table.columns().size(); ++c) {
            const Cell& cell = row[c];
            auto& slot = obj[table.columns()[c]];
            if (const auto* s = std::get_if<std::string>(&cell)) slot = *s;
            else if (const auto* i = std::get_if<int64_t>(&cell)) slot = *i;
            else if (const auto* b = std::get_if<bool>(&cell)) slot = *b;
            else if (const auto* d = std::get_if<double>(&cell)) slot = std::isfinite(*d) ? nlohmann::ordered_json(*d) : nlohmann::ordered_json(cell_text(cell));
            else slot = nullptr;
        }
        rows.push_back(std::move(obj));
    }
    return rows;
}

std::string json_text(const nlohmann::ordered_json& j, int indent) {
    return j.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

void write_json(const Table& table, std::ostream& out) { out << json_text(to_json(table), 2) << '\n'; }

namespace {

// A name as an SQL identifier: letters, digits and underscores, not starting with a digit.
std::string sql_identifier(std::string_view name) {
    std::string id;
    for (char c : name) id += std::isalnum(static_cast<unsigned char>(c)) != 0 ? c : '_';
    if (id.empty() || std::isdigit(static_cast<unsigned char>(id.front())) != 0) id.insert(0, "_");
    return id;
}

// The column's type from its cells: INTEGER when every value is an integer or a yes/no, REAL when
// every value is a number, else TEXT.
std::string sql_type(const Table& table, size_t column) {
    bool integer = true, number = true;
    for (const auto& row : table.rows()) {
        const Cell& c = row[column];
        if (std::holds_alternative<std::monostate>(c)) continue;
        if (std::holds_alternative<std::string>(c)) integer = number = false;
        if (std::holds_alternative<double>(c)) integer = false;
    }
    return integer ? "INTEGER" : number ? "REAL" : "TEXT";
}

std::string sql_value(const Cell& c) {
    if (std::holds_alternative<std::monostate>(c)) return "NULL";
    if (const auto* b = std::get_if<bool>(&c)) return *b ? "1" : "0";
    if (const auto* i = std::get_if<int64_t>(&c)) return std::to_string(*i);
    if (const auto* d = std::get_if<double>(&c)) {
        if (!std::isfinite(*d)) return "NULL";
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.17g", *d);
        return buf;
    }
    std::string quoted = "'";
    for (char ch : std::get<std::string>(c)) quoted += ch == '\'' ? std::string("''") : std::string(1, ch);
    return quoted + "'";
}

}  // namespace

void write_sql(const Table& table, std::string_view name, std::ostream& out) {
    const std::string id = sql_identifier(name);
    std::string columns;
    for (size_t i = 0; i < table.columns().size(); ++i) columns += (i > 0 ? ", " : "") + sql_identifier(table.columns()[i]);
    out << "CREATE TABLE IF NOT EXISTS " << id << " (\n";
    for (size_t i = 0; i < table.columns().size(); ++i) {
        out << "  " << sql_identifier(table.columns()[i]) << ' ' << sql_type(table, i)
            << (i + 1 < table.columns().size() ? ",\n" : "\n");
    }
    out << ");\n";
    for (const auto& row : table.rows()) {
        out << "INSERT INTO " << id << " (" << columns << ") VALUES (";
        for (size_t i = 0; i < row.size(); ++i) out << (i > 0 ? ", " : "") << sql_value(row[i]);
        out << ");\n";
    }
}

void write(const Table& table, Format format, std::ostream& out) {
    switch (format) {
        case Format::Table: return write_text(table, out);
        case Format::Json: return write_json(table, out);
        case Format::Csv: return write_csv(table, out);
        case Format::Markdown: return write_markdown(table, out);
        case Format::Sql: return write_sql(table, "results", out);
    }
}

}  // namespace xb::report
