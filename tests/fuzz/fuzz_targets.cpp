#include "fuzz_targets.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>

#include "alloc/graph_allocator.hpp"
#include "builtin/builtin_backends.hpp"
#include "config/config_parse.hpp"
#include "config/expr.hpp"
#include "formats/gguf.hpp"
#include "models/gguf_model.hpp"
#include "config/model.hpp"
#include "config/model_io.hpp"
#include "formats/npy.hpp"
#include "config/placement.hpp"
#include "sched/sched_dot.hpp"
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
    auto info = read_gguf_model_info(*file);
    if (!info.is_ok()) return 0;
    DecoderParams p = info->params;
    p.n_layers = std::min(p.n_layers, 2);  // enough to check the roles; keeps each run fast
    p.n_tokens = 2;
    p.n_kv = 4;
    Context ctx;
    (void)build_gguf_graph(ctx, *file, *info, p);
    return 0;
}

namespace {

// Total bytes of a graph's tensors: the scheduler and compute targets skip graphs over
// kMaxGraphBytes so that runs stay fast and within the fuzzer's memory limit (the config target
// covers big shapes).
size_t graph_bytes(const Graph& graph) {
    size_t bytes = 0;
    for (const auto* list : {&graph.leafs(), &graph.nodes()}) {
        for (const Tensor* t : *list) bytes += t->nbytes();
    }
    return bytes;
}

constexpr size_t kMaxGraphBytes = size_t{64} << 20;
constexpr int kMaxComputeLayers = 2;

// The file gguf_compute writes each input to: one per process (libFuzzer's -fork and -jobs run
// several), removed when the process ends.
class ScratchFile {
public:
    ScratchFile()
        : path_((std::filesystem::temp_directory_path() / ("xb-fuzz-" + std::to_string(::getpid()) + ".gguf")).string()) {}
    ~ScratchFile() {
        std::error_code ec;
        std::filesystem::remove(path_, ec);
    }
    const std::string& write(const uint8_t* data, size_t size) {
        std::ofstream out(path_, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
        return path_;
    }

private:
    std::string path_;
};

// The CPU backend of the process's registry, computing on one thread (the fuzzer's unit of work
// stays one core; libFuzzer's -jobs uses the others).
Backend* fuzz_cpu() {
    static const std::unique_ptr<Backend> cpu = [] {
        Device* dev = global_registry().dev_by_name("CPU");
        if (dev == nullptr) std::abort();
        auto backend = dev->init_backend("threads=1");
        if (!backend.is_ok()) std::abort();
        return std::move(backend).value();
    }();
    return cpu.get();
}

}  // namespace

ComputeStage gguf_compute_stage(const uint8_t* data, size_t size) {
    static ScratchFile file;
    const std::string& path = file.write(data, size);
    auto spec = config::load_config(path);
    if (!spec.is_ok() || !spec->model) return ComputeStage::Refused;
    // Cheap to look at, costly to build in full: the layers are capped before the decoder is made.
    auto reader = GgufReader::open(path);
    if (!reader.is_ok()) return ComputeStage::Refused;
    auto info = read_gguf_model_info(*reader);
    if (!info.is_ok()) return ComputeStage::Refused;
    GgufModelParams& g = spec->model->gguf;
    g.n_layers = std::min(info->params.n_layers, kMaxComputeLayers);
    g.n_tokens = 2;
    g.n_kv = 4;
    config::BuildOptions build;
    build.backends = {"CPU"};
    auto model = config::build_model(*spec, global_registry(), build);
    if (!model.is_ok()) return ComputeStage::Refused;
    if (graph_bytes(model->graph) > kMaxGraphBytes) return ComputeStage::Skipped;
    Backend* cpu = fuzz_cpu();
    Backend* placed[] = {cpu};
    if (!config::place_and_init(*model, placed).is_ok()) return ComputeStage::Refused;
    GraphAllocator galloc(cpu->default_buffer_type());
    if (!galloc.alloc_graph(model->graph).is_ok() || !model->set_inputs().is_ok()) return ComputeStage::Refused;
    if (!cpu->graph_compute(model->graph).is_ok()) return ComputeStage::Refused;
    if (!config::nonfinite_outputs(*model).is_ok()) return ComputeStage::Refused;
    return ComputeStage::Computed;
}

int gguf_compute(const uint8_t* data, size_t size) {
    (void)gguf_compute_stage(data, size);
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

std::string dot_problem(std::string_view dot) {
    std::set<std::string, std::less<>> declared;
    std::vector<std::string> referenced;
    size_t line_no = 0;
    while (!dot.empty()) {
        const size_t end = std::min(dot.find('\n'), dot.size());
        const std::string_view line = dot.substr(0, end);
        dot.remove_prefix(std::min(end + 1, dot.size()));
        ++line_no;
        bool quoted = false;
        for (size_t i = 0; i < line.size(); ++i) {
            if (quoted && line[i] == '\\') ++i;  // an escaped character
            else if (line[i] == '"') quoted = !quoted;
        }
        if (quoted) return "line " + std::to_string(line_no) + ": unterminated string";
        // Statements are "  ID [attributes];" and "  FROM -> TO[ attributes];", indented further
        // inside a subgraph (the legend, a split's cluster).
        const size_t first = line.find_first_not_of(' ');
        if (first == std::string_view::npos || first < 2 || line.find('[') == first) continue;
        const std::string_view statement = line.substr(first);
        const std::string_view id = statement.substr(0, statement.find_first_of(" ;["));
        if (statement.substr(id.size()).starts_with(" -> ")) {
            const std::string_view rest = statement.substr(id.size() + 4);
            referenced.emplace_back(id);
            referenced.emplace_back(rest.substr(0, rest.find_first_of(" ;[")));
        } else if (statement.substr(id.size()).starts_with(" [")) {
            declared.emplace(id);
        }
    }
    for (const std::string& id : referenced) {
        if (!declared.count(id)) return "edge to undeclared id " + id;
    }
    return {};
}

int sched_report(const uint8_t* data, size_t size) {
    auto spec = config::parse_config(text_of(data, size), "fuzz.json", "/nonexistent-fuzz-dir");
    if (!spec.is_ok()) return 0;
    if (spec->model && spec->model->kind == config::ModelKind::Gguf) return 0;
    config::BuildOptions build;
    build.device_map = {{"CUDA0", "SIM0"}, {"CUDA1", "SIM1"}};
    if (spec->placement.backends.size() < 2) build.backends = {"SIM0", "CPU"};
    auto model = config::build_model(*spec, global_registry(), build);
    if (!model.is_ok() || graph_bytes(model->graph) > kMaxGraphBytes) return 0;
    // Values do not change the schedule, and making them (quantizing random weights) takes seconds
    // under ASan for the bigger configs.
    model->inits.clear();
    auto backends = config::init_backends(model->placement, global_registry());
    if (!backends.is_ok()) return 0;
    std::vector<Backend*> raw;
    for (const auto& b : *backends) raw.push_back(b.get());
    if (!config::place_and_init(*model, raw).is_ok()) return 0;
    auto sched = Scheduler::create(raw, {}, model->placement.scheduler);
    if (!sched.is_ok() || !config::assign_nodes(*model, **sched).is_ok()) return 0;
    if (!(*sched)->alloc_graph(model->graph).is_ok()) return 0;

    for (DotLevel level : {DotLevel::Split, DotLevel::Layer, DotLevel::Node}) {
        std::ostringstream dot;
        write_dot(model->graph, **sched, dot, level);
        if (const std::string problem = dot_problem(dot.str()); !problem.empty()) {
            std::fprintf(stderr, "sched_report: malformed DOT: %s\n", problem.c_str());
            std::abort();
        }
    }
    std::FILE* sink = std::fopen("/dev/null", "w");
    if (sink != nullptr) {
        (*sched)->report().print(sink, 2);
        std::fclose(sink);
    }
    return 0;
}

Target find_target(std::string_view name) {
    static constexpr std::pair<std::string_view, Target> kTargets[] = {
        {"config", &config}, {"expression", &expression}, {"npy", &npy},
        {"gguf", &gguf},     {"gguf_model", &gguf_model}, {"gguf_compute", &gguf_compute},
        {"report", &report}, {"sched_report", &sched_report},
    };
    for (const auto& [n, t] : kTargets) {
        if (n == name) return t;
    }
    return nullptr;
}

}  // namespace xb::fuzz
