#include "check.hpp"

#include "opcheck/case_runner.hpp"
#include "opcheck/compare.hpp"

namespace xb::tools::opcheck {

namespace {

using xb::opcheck::CaseRun;
using xb::opcheck::RunOptions;

// Why a run cannot be compared at all ("" when it can).
std::string run_problem(const CaseRun& run) {
    if (!run.status.is_ok()) return run.status.to_string();
    if (!run.overrun.empty()) return "out-of-bounds " + run.overrun;
    return {};
}

// Compares a target's run with the CPU's: NaN/Inf where the reference has finite values, then the
// NMSE against the CPU's output.
void judge(const CaseRun& expected, const CaseRun& run, CheckRow& row) {
    if (std::string why = run_problem(run); !why.empty()) {
        row.verdict = Verdict::Fail;
        row.detail = why;
        return;
    }
    if (run.out.ne() != expected.out.ne()) {
        row.verdict = Verdict::Fail;
        row.detail = xb::opcheck::nonfinite_mismatch(run.out, expected.out);  // names both shapes
        return;
    }
    row.nmse = xb::opcheck::nmse(run.out, expected.out);
    row.nmse_ref = xb::opcheck::nmse(run.out, expected.ref);
    row.max_abs = xb::opcheck::max_abs_error(run.out, expected.out);
    // NaN and Inf: judged against the reference, so that a CPU bug cannot excuse them.
    if (std::string special = xb::opcheck::nonfinite_mismatch(run.out, expected.ref, row.c->source->specials); !special.empty()) {
        row.verdict = Verdict::Fail;
        row.detail = "non-finite value " + special;
        return;
    }
    row.detail = xb::opcheck::mismatch(run.out, expected.out, row.tolerance, row.c->source->specials);
    row.verdict = row.detail.empty() ? Verdict::Ok : Verdict::Fail;
}

}  // namespace

const char* verdict_name(Verdict v) {
    switch (v) {
        case Verdict::Ok: return "ok";
        case Verdict::Fail: return "FAIL";
        case Verdict::Unsupported: return "unsupported";
    }
    return "?";
}

std::vector<CheckRow> check_case(WorkerBackends& backends, const SelectedCase& c, uint64_t seed) {
    RunOptions with_reference;
    with_reference.seed = seed;
    const CaseRun expected = xb::opcheck::run_case(*c.source, *backends.cpu, with_reference);
    std::string cpu_problem = expected.unsupported.empty() ? run_problem(expected) : expected.unsupported;
    if (cpu_problem.empty() && expected.out.ne() != expected.ref.ne()) {
        cpu_problem = "output shape " + xb::opcheck::shape_text(expected.out.ne()) + " != reference shape " +
                      xb::opcheck::shape_text(expected.ref.ne());
    }
    RunOptions plain = with_reference;
    plain.reference = false;
    std::vector<CheckRow> rows;
    for (auto& target : backends.targets) {
        CheckRow row;
        row.backend = target->name();
        row.c = &c;
        row.tolerance = kCpuToleranceFactor * c.source->tolerance;
        if (!cpu_problem.empty()) {
            row.verdict = Verdict::Fail;  // without the CPU's result there is nothing to compare with
            row.detail = "CPU reference run: " + cpu_problem;
        } else if (const CaseRun run = xb::opcheck::run_case(*c.source, *target, plain); !run.unsupported.empty()) {
            row.verdict = Verdict::Unsupported;
            row.detail = run.unsupported;
        } else {
            judge(expected, run, row);
        }
        rows.push_back(std::move(row));
    }
    return rows;
}

}  // namespace xb::tools::opcheck
