// What every tool shares: device selection and parameters, output formats, exit codes.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/backend.hpp"
#include "core/status.hpp"
#include "device_params.hpp"
#include "report/table.hpp"

// CLI11 only where options are declared (each tool's main.cpp, cli.cpp, nonfinite.cpp): its header
// defines validator objects that every including source compiles again, 5-6 s each.
namespace CLI {
class App;
class Validator;
}  // namespace CLI

namespace xb::tools {

// Exit codes of every tool.
inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;  // a mismatch or regression
inline constexpr int kExitUsage = 2;        // bad flags, bad config, missing file or device

struct CommonOptions {
    std::string tool;                        // the program's name (run_tool sets it), for reports
    std::string config;
    std::vector<std::string> backends;       // -b CPU,SIM0
    int threads = 0;                         // -t: CPU threads (0: default)
    std::vector<std::string> device_params;  // -P SIM0:fault_node=12, as given
    DeviceParams params;                     // -P parsed once (run_tool), for every path to apply
    std::vector<std::string> device_map;     // --map CUDA0=SIM0
    std::optional<uint64_t> seed;
    std::string host_weights;                // --host-weights pinned|pageable ("" = the config's)
    std::optional<int> outputs;              // --outputs all|last|N: positions whose logits a model computes
    int default_outputs = 0;                 // the tool's choice when neither --outputs nor the config says
    std::string tokens;                      // --tokens FILE|ID,ID,...: a model file's batch ("" = the config's)
    std::optional<int> kv_cells;             // --kv-cells N: a model file's cache cells (llama.cpp pads to 256)
    std::string format = "table";            // table, json, csv, md (and jsonl with a RunMatrix)
    std::string output;                      // -o FILE ("" = stdout)
    bool list_devices = false;
    bool info = false;                       // --info: describe the config's model and exit
};

// graph-run's lists, as llama-bench's: one run per (config, backend set, threads), in that order.
struct RunMatrix {
    std::vector<std::string> configs;                    // -c a.json,b.json
    std::vector<std::vector<std::string>> backend_sets;  // -b SIM0,CPU -b CPU: one set per -b
    std::vector<int> threads;                            // -t 1,2
    std::vector<CommonOptions> runs(const CommonOptions& base) const;  // base with each combination
};

// --outputs' words: "all" (0), "last" (1) or a number of positions N >= 1; nullopt otherwise.
std::optional<int> parse_outputs(const std::string& word);

// Adds the shared flags to `app`. With a matrix, -c, -b and -t take lists into it (options then
// holds the first of each, for --info) and --format also offers jsonl.
void add_common_options(CLI::App& app, CommonOptions& options, RunMatrix* matrix = nullptr);

// --outputs, --tokens and --kv-cells, for the tools that run model configs (the help of --outputs names
// options.default_outputs: set that first).
void add_outputs_option(CLI::App& app, CommonOptions& options);

// Range checks whose errors read as words ("--reps: 0 is too small (at least 1)"), where CLI11's
// PositiveNumber and NonNegativeNumber print the limits of a double (a 309-digit number).
CLI::Validator at_least(int min);        // an integer option: `min` or more
CLI::Validator more_than(double bound);  // a real option: above `bound`

// Parses argv; returns an exit code when the program should stop now (help, or a usage error
// already printed on one line), or -1 to go on.
int parse(CLI::App& app, int argc, char** argv);

// The message for command-line arguments that no option took (`extras`, as given), with the option
// of `names` ("--reps", "-r", ...) closest to the first one when it looks like a typo: "unknown
// option --repat; did you mean --reps?". Every tool's (graph-bench's too) says it this way.
std::string unknown_arguments_message(const std::vector<std::string>& extras, const std::vector<std::string>& names);

// The common main(): parses argv, parses -P into options.params and applies its settings (a bad
// one is a usage error), answers --list-devices and --info, else calls run(). Faults are left to
// the tool: they name nodes of a graph (DeviceParams::apply_faults).
int run_tool(CLI::App& app, int argc, char** argv, CommonOptions& options, const std::function<int()>& run,
             RunMatrix* matrix = nullptr);

// The default config's path: configs/default.json in the current directory when it is there, else
// the repository's (next to the build directory of this executable) or an installed copy
// (PREFIX/share/xbackend), so that a tool run from anywhere finds it; the plain relative path when
// none exists (the error then names it).
std::string default_config_path();
// A file of the repository (or of an installed copy) by its path in it, found the same way:
// "scripts/compare_plot.py" -> its path; "" when there is none.
std::string find_repository_file(const std::string& relative_path);

// -t: the threads of the host devices (CPU and BLAS, which compute in one OpenMP team); nothing
// when it is 0.
Status apply_threads(const CommonOptions& options);
// The table of registered devices: name, type, description, memory, settings.
report::Table device_table();

// Calls write(stream) on -o FILE, or on stdout when there is none.
Status write_output(const CommonOptions& options, const std::function<void(std::ostream&)>& write);
// Writes `table` in the chosen format to -o FILE or stdout.
Status write_table(const report::Table& table, const CommonOptions& options);
// A tool's whole report: `document` with --format json, else `table` in the chosen format.
Status write_report(const report::Table& table, const nlohmann::ordered_json& document, const CommonOptions& options);

// Prints "tool: <message>" on stderr as one line: control characters escaped, at most about 1,000
// characters (core/message_text.hpp), whatever names from files or flags the message quotes.
void tell(std::string_view tool, std::string_view message);
// Prints "tool: <status>" to stderr (tell) and returns the exit code for it.
int fail(const char* tool, const Status& status);

// Comma-separated list (or `sep`-separated: "11+ffn_out") -> items (empty items dropped), and back
// ("SIM0,CPU").
std::vector<std::string> split_list(const std::string& text, char sep = ',');
std::string join_list(const std::vector<std::string>& items);
// Every item between separators, empty ones included (where an empty item is an error to report).
std::vector<std::string> split_on(const std::string& text, char sep);

}  // namespace xb::tools
