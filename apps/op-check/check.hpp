// One case checked on every backend under test against the CPU: the verdict of each pair.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backends.hpp"
#include "selection.hpp"

namespace xb::tools::opcheck {

// The backend's output may differ from the CPU's by this factor times the case's tolerance: when
// both are within the tolerance of the float64 reference (NMSE, a squared distance), they are
// within 4x of each other by the triangle inequality on its square root.
inline constexpr double kCpuToleranceFactor = 4.0;

enum class Verdict { Ok, Fail, Unsupported };
const char* verdict_name(Verdict v);  // "ok", "FAIL", "unsupported"

struct CheckRow {
    std::string backend;
    const SelectedCase* c = nullptr;
    Verdict verdict = Verdict::Ok;
    std::optional<double> nmse;      // against the CPU's output
    std::optional<double> nmse_ref;  // against the float64 reference (for information)
    std::optional<double> max_abs;   // against the CPU's output
    double tolerance = 0.0;          // the NMSE allowed against the CPU
    std::string detail;              // why it failed, or why it is unsupported
};

// Runs the case on the CPU (with its reference) and on every target; one row per target.
std::vector<CheckRow> check_case(WorkerBackends& backends, const SelectedCase& c, uint64_t seed);

}  // namespace xb::tools::opcheck
