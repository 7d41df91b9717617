#include "fuzz_targets.hpp"

#include <algorithm>
#include <sstream>
#include <string>

#include "builtin/builtin_backends.hpp"
#include "config/config_parse.hpp"
#include "config/expr.hpp"
#include "config/gguf.hpp"
#include "config/gguf_model.hpp"
#include "config/model.hpp"
#include "config/npy.hpp"
#include "report/table.hpp"

namespace xb::fuzz {

namespace {

std::string_view text_of(const uint8_t* data, size_t size) { return {reinterpret_cast<const char*>(data), size}; }
std::span<const std::byte> bytes_of(const uint8_t* data, size_t size) { return {reinterpret_cast<const std::byte*>(data), size}; }

}  // namespace

int config(const uint8_t* data, size_t size) {
    // Files named by the config resolve against a directory that does not exist: the target
    // checks the parser and builders, not what files lie around.
    auto spec = config::parse_config(text_of(data, size), "fuzz.json", "/nonexistent-fuzz-dir");
    if (!spec.is_ok()) return 0;
    if (spec->model && spec->model->kind == config::ModelKind::Gguf) return 0;  // the gguf_model target's
    auto model = config::build_model(*spec, global_registry());
    (void)model;
    return 0;
}

int expression(const uint8_t* data, size_t size) {
    const config::ParamList params = {{"n", 7.0}, {"n_embd", 64.0}, {"big", 1e300}};
    (void)config::eval_expr(text_of(data, size), params);
    return 0;
}

int npy(const uint8_t* data, size_t size) {
    auto a = decode_npy(bytes_of(data, size), "fuzz.npy");
    if (a.is_ok()) (void)a->ne();
    return 0;
}

int gguf(const uint8_t* data, size_t size) {
    auto file = GgufReader::parse(bytes_of(data, size), "fuzz.gguf");
    if (!file.is_ok()) return 0;
    for (const GgufTensorInfo& t : file->tensors()) (void)ggml_type_info(t.type);
    for (const GgufKV& kv : file->kvs()) {
        (void)kv.value.as_int();
        (void)kv.value.as_float();
    }
    return 0;
}

int gguf_model(const uint8_t* data, size_t size) {
    auto file = GgufReader::parse(bytes_of(data, size), "fuzz.gguf");
    if (!file.is_ok()) return 0;
    auto info = config::read_gguf_model_info(*file);
    if (!info.is_ok()) return 0;
    LlamaParams p = info->params;
    p.n_layers = std::min(p.n_layers, 2);  // enough to check the roles; keeps each run fast
    p.n_tokens = 2;
    p.n_kv = 4;
    Context ctx;
    auto m = build_llama_decoder(ctx, p, config::gguf_weight_types(*file));
    if (m.is_ok()) (void)config::check_gguf_tensors(*file, *info, *m);
    return 0;
}

int report(const uint8_t* data, size_t size) {
    // Cells separated by NUL bytes, three columns, the first byte choosing each cell's kind.
    report::Table table({"name", "value", "note"});
    std::vector<report::Cell> row;
    std::string_view rest = text_of(data, size);
    while (!rest.empty()) {
        const size_t end = std::min(rest.find('\0'), rest.size());
        const std::string_view cell = rest.substr(0, end);
        rest.remove_prefix(std::min(end + 1, rest.size()));
        const unsigned kind = cell.empty() ? 0 : static_cast<unsigned char>(cell[0]) % 5;
        if (kind == 0) row.emplace_back(std::monostate{});
        if (kind == 1) row.emplace_back(std::string(cell));
        if (kind == 2) row.emplace_back(static_cast<int64_t>(std::hash<std::string_view>{}(cell)));
        if (kind == 3) row.emplace_back(static_cast<double>(std::hash<std::string_view>{}(cell)) * (cell.size() % 2 ? 1e-300 : 1e300));
        if (kind == 4) row.emplace_back(cell.size() % 2 == 0);
        if (row.size() == 3) {
            table.add_row(std::move(row));
            row.clear();
        }
    }
    if (!row.empty()) table.add_row(std::move(row));
    for (report::Format f : {report::Format::Table, report::Format::Json, report::Format::Csv, report::Format::Markdown}) {
        std::ostringstream out;
        report::write(table, f, out);
    }
    return 0;
}

Target find_target(std::string_view name) {
    static constexpr std::pair<std::string_view, Target> kTargets[] = {
        {"config", &config}, {"expression", &expression}, {"npy", &npy},
        {"gguf", &gguf},     {"gguf_model", &gguf_model}, {"report", &report},
    };
    for (const auto& [n, t] : kTargets) {
        if (n == name) return t;
    }
    return nullptr;
}

}  // namespace xb::fuzz
