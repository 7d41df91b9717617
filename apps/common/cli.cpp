#include "cli.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <CLI/CLI.hpp>

#include "backend/registry.hpp"
#include "build_info.hpp"
#include "builtin/builtin_backends.hpp"
#include "builtin/environment.hpp"
#include "config/config_error.hpp"
#include "core/file_io.hpp"
#include "core/message_text.hpp"
#include "model_info.hpp"
#include "run_metadata.hpp"

namespace xb::tools {

void add_common_options(CLI::App& app, CommonOptions& o, RunMatrix* matrix) {
    constexpr const char* kConfigHelp = "JSON config file (see configs/ and the README)";
    constexpr const char* kBackendsHelp = "Devices to use, in priority order, e.g. SIM0,CPU (overrides the config)";
    constexpr const char* kThreadsHelp =
        "CPU threads (default: OMP_NUM_THREADS, else the physical cores; graph-run and sched-profile leave out\n"
        "cores already busy, with a warning)";
    if (matrix == nullptr) {
        app.add_option("-c,--config", o.config, kConfigHelp)->capture_default_str();
        app.add_option("-b,--backends", o.backends, kBackendsHelp)->delimiter(',');
        app.add_option("-t,--threads", o.threads, kThreadsHelp)->check(at_least(1));
    } else {
        app.add_option("-c,--config", matrix->configs, std::string(kConfigHelp) + "; a list runs each")
            ->delimiter(',')
            ->default_str(o.config);
        app.add_option("-b,--backends", matrix->backend_sets, std::string(kBackendsHelp) + "; repeat -b to run each set")
            ->delimiter(',');
        app.add_option("-t,--threads", matrix->threads, std::string(kThreadsHelp) + "; a list (1,2,4) runs each")
            ->delimiter(',')
            ->check(at_least(1));
    }
    app.add_option("-P,--device-param", o.device_params,
                   "NAME:KEY=VALUE device setting, repeatable, e.g. -P SIM0:unsupported=rope,get_rows");
    app.add_option("--map", o.device_map, "FROM=TO: run what the config puts on FROM on TO, e.g. --map CUDA0=SIM0");
    app.add_option("--seed", o.seed, "Seed for random weights and inputs (overrides the config)");
    app.add_option("--host-weights", o.host_weights,
                   "pinned or pageable: where weights that stay on the host live when a GPU with a pinned host buffer\n"
                   "type takes part (overrides placement.host_weights; default pinned, as llama.cpp; pageable is\n"
                   "llama.cpp's --no-host)")
        ->check(CLI::IsMember({"pinned", "pageable"}));
    if (matrix == nullptr) {
        app.add_option("--format", o.format, "Output format: table, json, csv or md")
            ->check(CLI::IsMember({"table", "json", "csv", "md"}))
            ->capture_default_str();
    } else {
        app.add_option("--format", o.format, "Output format: table, json, jsonl (one run per line), csv, md or sql")
            ->check(CLI::IsMember({"table", "json", "jsonl", "csv", "md", "sql"}))
            ->capture_default_str();
    }
    app.add_option("-o,--output", o.output, "Write the report to FILE instead of stdout");
    app.add_flag("--list-devices", o.list_devices, "List the devices (name, type, description, memory, settings) and exit");
    app.add_flag("--info", o.info,
                 "Describe the config's model and exit: for a llama.cpp GGUF file (-c model.gguf, or a gguf config) its "
                 "architecture, sizes, tensor types and bytes");
    // The build that made this binary (scripts/gpu-check records it next to the results).
    app.set_version_flag("--version", app.get_name() + " (xbackend) " + kBuildCommit + (kBuildDirty ? "+dirty" : "") +
                                          ", " + XB_BUILD_TYPE + ", " + XB_COMPILER,
                         "Print the commit and build of this binary and exit");
}

std::vector<CommonOptions> RunMatrix::runs(const CommonOptions& base) const {
    std::vector<CommonOptions> out;
    const std::vector<std::string> one_config = {base.config};
    const std::vector<std::vector<std::string>> one_set = {base.backends};
    const std::vector<int> one_count = {base.threads};
    for (const std::string& config : configs.empty() ? one_config : configs) {
        for (const std::vector<std::string>& set : backend_sets.empty() ? one_set : backend_sets) {
            for (const int n : threads.empty() ? one_count : threads) {
                CommonOptions o = base;
                o.config = config;
                o.backends = set;
                o.threads = n;
                out.push_back(std::move(o));
            }
        }
    }
    return out;
}

namespace {

// The number that `text` is, all of it, or none.
std::optional<double> number_in(const std::string& text) {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size()) return std::nullopt;
    return v;
}

// A check of a number against one bound: `bound_text` ("at least 1") in its error, `tag` in --help
// after the type, as CLI11 names its own checks ("INT:POSITIVE").
CLI::Validator bound_check(const std::string& tag, const std::string& bound_text, std::function<bool(double)> within) {
    return CLI::Validator(
        [bound_text, within](std::string& input) -> std::string {
            const std::optional<double> v = number_in(input);
            if (!v || !std::isfinite(*v)) return input + " is not a number";
            return within(*v) ? std::string() : input + " is too small (" + bound_text + ")";
        },
        tag);
}

// Every name of every option of `app`, as typed: "--reps", "-r".
std::vector<std::string> option_names(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::Option* opt : app.get_options()) {
        for (const std::string& name : opt->get_lnames()) names.push_back("--" + name);
        for (const std::string& name : opt->get_snames()) names.push_back("-" + name);
    }
    return names;
}

}  // namespace

std::optional<int> parse_outputs(const std::string& word) {
    if (word == "all") return 0;
    if (word == "last") return 1;
    if (word.empty() || word.size() > 9 || word.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    const int n = std::stoi(word);
    return n >= 1 ? std::optional<int>(n) : std::nullopt;
}

void add_outputs_option(CLI::App& app, CommonOptions& o) {
    app.add_option_function<std::string>(
           "--outputs",
           [&o](const std::string& word) {
               o.outputs = parse_outputs(word);
               if (!o.outputs) throw CLI::ValidationError("--outputs", "expected all, last or a number of positions, got '" + word + "'");
           },
           std::string("Positions whose logits a model (llama_decoder, GGUF) computes: all, last or N, the batch's last N\n"
                       "(overrides the config's \"outputs\"; default: the config's, else ") +
               (o.default_outputs == 1 ? "last, as llama-bench measures)" : "all)"))
        ->type_name("all|last|N");
    app.add_option("--tokens", o.tokens,
                   "A llama.cpp model file's batch: a token file (a JSON array, as llama-tokenize writes, or one id a\n"
                   "line) or ids as a list (2,818,5279); n_tokens becomes their count (overrides the config's \"tokens\")")
        ->type_name("FILE|IDS");
    app.add_option("--kv-cells", o.kv_cells,
                   "A llama.cpp model file's cache of N cells, the ones past its positions empty and masked, as\n"
                   "llama.cpp pads its cache to 256 (overrides the config's \"kv_cells\"): with 256, a ggml device\n"
                   "computes llama.cpp's own logits")
        ->check(CLI::PositiveNumber)
        ->type_name("N");
}

CLI::Validator at_least(int min) {
    const std::string tag = min == 0 ? "NONNEGATIVE" : min == 1 ? "POSITIVE" : ">=" + std::to_string(min);
    return bound_check(tag, "at least " + std::to_string(min), [min](double v) { return v >= min; });
}

CLI::Validator more_than(double bound) {
    std::ostringstream number;
    number << bound;
    return bound_check(bound == 0 ? "POSITIVE" : ">" + number.str(), "more than " + number.str(),
                       [bound](double v) { return v > bound; });
}

std::string unknown_arguments_message(const std::vector<std::string>& extras, const std::vector<std::string>& names) {
    constexpr const char* kSeeHelp = " (--help lists the options)";
    // Suggestions need a few letters: any one-letter flag is one edit from every other.
    constexpr size_t kMinLetters = 3;
    for (const std::string& arg : extras) {
        if (arg.size() < 2 || arg[0] != '-' || number_in(arg)) continue;  // a stray value, a negative number
        const std::string flag = arg.substr(0, arg.find('='));
        const size_t start = flag.find_first_not_of('-');
        std::optional<std::string> best;
        if (start != std::string::npos && flag.size() - start >= kMinLetters) {
            best = closest_name(flag, names);
            if (!best && flag[1] != '-') best = closest_name("-" + flag, names);  // -reps for --reps
        }
        return "unknown option " + flag + (best ? "; did you mean " + *best + "?" : kSeeHelp);
    }
    std::string text = extras.size() == 1 ? "unexpected argument" : "unexpected arguments";
    for (const std::string& arg : extras) text += " " + quoted_name(arg);
    return text + kSeeHelp;
}

int parse(CLI::App& app, int argc, char** argv) {
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        std::cout << app.help();
        return kExitOk;
    } catch (const CLI::CallForVersion& e) {
        std::cout << e.what() << "\n";
        return kExitOk;
    } catch (const CLI::ExtrasError&) {
        tell(app.get_name(), unknown_arguments_message(app.remaining(), option_names(app)));
        return kExitUsage;
    } catch (const CLI::ParseError& e) {
        // CLI11's message names the option ("--reps: 0 is too small (at least 1)"): one line.
        tell(app.get_name(), e.what());
        return kExitUsage;
    }
    return -1;
}

std::string find_repository_file(const std::string& relative_path) {
    namespace fs = std::filesystem;
    const fs::path relative = relative_path;
    std::error_code ec;
    if (fs::exists(relative, ec)) return relative.string();
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        // build/apps/TOOL -> the repository; PREFIX/bin/TOOL -> PREFIX/share/xbackend.
        for (const fs::path& candidate : {exe.parent_path() / "../.." / relative,
                                          exe.parent_path() / "../share/xbackend" / relative}) {
            if (fs::exists(candidate, ec)) return fs::weakly_canonical(candidate, ec).string();
        }
    }
    return {};
}

std::string default_config_path() {
    const std::string found = find_repository_file("configs/default.json");
    return found.empty() ? std::string("configs/default.json") : found;
}

int run_tool(CLI::App& app, int argc, char** argv, CommonOptions& options, const std::function<int()>& run,
             RunMatrix* matrix) {
    if (const int rc = parse(app, argc, argv); rc >= 0) return rc;
    options.tool = app.get_name();
    auto params = DeviceParams::parse(options.device_params);
    if (!params.is_ok()) return fail(app.get_name().c_str(), params.status());
    options.params = std::move(*params);
    if (Status s = options.params.apply(global_registry()); !s.is_ok()) return fail(app.get_name().c_str(), s);
    if (Status s = check_environment(); !s.is_ok()) return fail(app.get_name().c_str(), s);
    if (const CLI::Option* c = app.get_option_no_throw("-c"); c != nullptr && c->count() == 0 &&
                                                                  options.config == "configs/default.json") {
        options.config = default_config_path();
    }
    if (matrix != nullptr) {  // the first of each list, for --info and the report's metadata
        if (!matrix->configs.empty()) options.config = matrix->configs.front();
        if (!matrix->backend_sets.empty()) options.backends = matrix->backend_sets.front();
        if (!matrix->threads.empty()) options.threads = matrix->threads.front();
    }
    if (options.list_devices) {
        const Status s = write_table(device_table(), options);
        return s.is_ok() ? kExitOk : fail(app.get_name().c_str(), s);
    }
    if (options.info) {
        const Status s = write_model_info(options);
        return s.is_ok() ? kExitOk : fail(app.get_name().c_str(), s);
    }
    return run();
}

Status apply_threads(const CommonOptions& o) {
    if (o.threads <= 0) return Status::ok();
    for (const char* name : {"CPU", "BLAS"}) {
        Device* host = global_registry().dev_by_name(name);
        if (host != nullptr) XB_RETURN_IF_ERROR(host->configure("threads=" + std::to_string(o.threads)));
    }
    return Status::ok();
}

report::Table device_table() {
    report::Table t({"name", "type", "description", "memory_free_MiB", "memory_total_MiB", "settings"});
    Registry& reg = global_registry();
    for (size_t i = 0; i < reg.dev_count(); ++i) {
        Device& d = reg.dev(i);
        const MemoryInfo m = d.memory();
        t.add_row({std::string(d.name()), std::string(device_type_name(d.type())), d.description(),
                   static_cast<int64_t>(m.free >> 20), static_cast<int64_t>(m.total >> 20), d.settings()});
    }
    return t;
}

Status write_output(const CommonOptions& o, const std::function<void(std::ostream&)>& write) {
    if (o.output.empty()) {
        write(std::cout);
        return Status::ok();
    }
    XB_ASSIGN_OR_RETURN(std::ofstream out, open_for_writing(o.output, "report (-o)"));
    write(out);
    return out.flush() ? Status::ok() : write_error(o.output, "report (-o)");
}

Status write_table(const report::Table& table, const CommonOptions& o) {
    const report::Format format = report::format_from_name(o.format).value_or(report::Format::Table);
    return write_output(o, [&](std::ostream& out) { report::write(table, format, out); });
}

Status write_report(const report::Table& table, const nlohmann::ordered_json& document, const CommonOptions& o) {
    if (o.format != "json") return write_table(table, o);
    nlohmann::ordered_json with_meta = document;
    if (with_meta.is_object()) with_meta["meta"] = run_metadata(o);  // a list (op-check --list-cases) stays one
    return write_output(o, [&](std::ostream& out) { out << report::json_text(with_meta, 2) << '\n'; });
}

void tell(std::string_view tool, std::string_view message) {
    // The whole line, the tool's name included, within kMaxMessageChars.
    const size_t room = kMaxMessageChars > tool.size() + 2 ? kMaxMessageChars - tool.size() - 2 : 0;
    std::cerr << tool << ": " << one_line(message, room) << '\n';
}

int fail(const char* tool, const Status& status) {
    tell(tool, status.message());
    return kExitUsage;
}

std::vector<std::string> split_list(const std::string& text, char sep) {
    std::vector<std::string> items;
    size_t pos = 0;
    while (pos <= text.size()) {
        const size_t end = std::min(text.find(sep, pos), text.size());
        if (end > pos) items.push_back(text.substr(pos, end - pos));
        pos = end + 1;
    }
    return items;
}

std::vector<std::string> split_on(const std::string& text, char sep) {
    std::vector<std::string> items;
    size_t pos = 0;
    while (pos <= text.size()) {
        const size_t end = std::min(text.find(sep, pos), text.size());
        items.push_back(text.substr(pos, end - pos));
        pos = end + 1;
    }
    return items;
}

std::string join_list(const std::vector<std::string>& items) {
    std::string text;
    for (const std::string& item : items) text += (text.empty() ? "" : ",") + item;
    return text;
}

}  // namespace xb::tools
