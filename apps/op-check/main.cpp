// op-check: per-op conformance and speed of backends against the CPU, over the op cases of
// lib/opcheck (every op of the core set over types, shapes, broadcasting and strided inputs).
//
//   op-check                                   # every device but the CPU, every case, in guarded memory
//   op-check -b SIM0 --op mul_mat,rope -p f16 --format json
//   op-check --mode perf -b BLAS --op mul_mat
//   op-check --mode support -P SIM0:unsupported=rope
#include <iostream>
#include <CLI/CLI.hpp>

#include "builtin/builtin_backends.hpp"
#include "cli.hpp"
#include "list_cases.hpp"
#include "opcheck/cases.hpp"
#include "options.hpp"
#include "perf_mode.hpp"
#include "selection.hpp"
#include "support_mode.hpp"
#include "test_mode.hpp"

namespace xb::tools::opcheck {
namespace {

int run(const OpCheckOptions& o) {
    if (Status s = apply_threads(o.common); !s.is_ok()) return fail(kTool, s);
    // A fault here names a node of each case's own graph (fault_node=0: the case's first node).
    if (Status s = o.common.params.apply_faults_as_given(global_registry()); !s.is_ok()) return fail(kTool, s);
    // The perf set is kept apart: its sizes would make the float64 reference slow.
    const std::vector<xb::opcheck::OpCase> set =
        o.mode == "perf" ? xb::opcheck::perf_cases() : xb::opcheck::all_cases();
    auto cases = select_cases(set, o);
    if (!cases.is_ok()) return fail(kTool, cases.status());
    if (o.list_cases) return list_cases(o, *cases);
    auto backends = pick_backends(o);
    if (!backends.is_ok()) return fail(kTool, backends.status());
    if (o.mode == "perf") return run_perf_mode(o, *cases, *backends);
    if (o.mode == "support") return run_support_mode(o, *cases, *backends);
    return run_test_mode(o, *cases, *backends);
}

void add_options(CLI::App& app, OpCheckOptions& o) {
    add_common_options(app, o.common);
    // op-check builds its own graphs: no config, so nothing to map either.
    app.remove_option(app.get_option("--config"));
    app.remove_option(app.get_option("--map"));
    app.get_option("--backends")->description("Devices to check, e.g. SIM0,BLAS (default: every device but the CPU; "
                                               "support mode: every device)");
    app.get_option("--seed")->description("Varies every case's input values (default: the values the tests use)");
    app.add_option("--mode", o.mode, "test (against the CPU), perf (timings) or support (per op and type)")
        ->check(CLI::IsMember({"test", "perf", "support"}))
        ->capture_default_str();
    // -o is the common --output, so the op filter is -O.
    app.add_option("-O,--op", o.ops, "Only these ops, e.g. add,mul_mat,rope; unary or glu, or one activation (silu)")
        ->delimiter(',');
    app.add_option("-p,--pattern", o.pattern,
                   "Only cases whose name holds this glob: * ? | ^ $, e.g. 'f16|bf16', '^mul_mat_*_f32$'");
    app.add_option("-j,--jobs", o.jobs, "Parallel workers in test mode, each with its own backends")
        ->check(at_least(1))
        ->capture_default_str();
    app.add_option("--perf-time", o.perf_seconds, "Perf mode: seconds of timed computes per case and backend")
        ->check(more_than(0))
        ->capture_default_str();
    app.add_flag("--list-cases", o.list_cases, "List the selected cases (name, op, type, tolerance; in JSON also the output node: op, shape, parameters, sources with strides) and exit");
}

}  // namespace
}  // namespace xb::tools::opcheck

int main(int argc, char** argv) {
    using namespace xb::tools;
    using namespace xb::tools::opcheck;
    CLI::App app{"op-check: per-op conformance and speed of backends against the CPU, like ggml's test-backend-ops.\n"
                 "Test mode runs every case (op x types x shapes, broadcasting, strided inputs) on the CPU and on\n"
                 "each backend (-b; default: every device but the CPU) with the same inputs, every tensor between\n"
                 "guard bytes and unwritten outputs pre-set to NaN; a case fails on an error, an out-of-bounds\n"
                 "write, a NaN or Inf where the float64 reference is finite, or an NMSE against the CPU above 4x\n"
                 "its tolerance.",
                 "op-check"};
    OpCheckOptions opts;
    add_options(app, opts);
    app.footer("Examples:\n"
               "  op-check -b SIM0 -j 2                       every case on SIM0, two workers\n"
               "  op-check -b SIM0 -P SIM0:fault_node=0 --op add --format json\n"
               "  op-check --mode perf -b BLAS,SIM0 -p 'mul_mat_*1024x1024'   the 1024-square products on two devices\n"
               "  op-check --mode support -P SIM0:unsupported=rope\n"
               "Exit codes: 0 every check passed, 1 a check failed, 2 usage or device error.");
    return run_tool(app, argc, argv, opts.common, [&] { return run(opts); });
}
