// Op conformance tests: every op case of lib/opcheck (the cases, their float64 reference and the
// guarded runner live there, shared with the op-check tool) on every registered device, compared
// with the reference.
//
// Files: op_test_util.hpp (this), test_op_util.cpp (the TEST_P and the multi-threaded run),
// test_ops_<family>.cpp (each family's instantiation: elementwise, layout, reduce, attention,
// matmul), test_ops_reference.cpp (self-checks of the reference), test_op_guards.cpp (the guard
// bytes catch out-of-bounds writes), test_ops_errors.cpp (bad inputs, runtime errors).
// Filter with e.g. --gtest_filter='Attention/OpTest.*rope*' or '*OpTest*CPU_mul_mat*'.
#pragma once

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "builtin/builtin_backends.hpp"
#include "opcheck/case_runner.hpp"
#include "opcheck/cases.hpp"
#include "opcheck/compare.hpp"
#include "exact/ops.hpp"

namespace xb::opcheck {
// gtest prints a case parameter by its name.
void PrintTo(const OpCase& c, std::ostream* os);
}  // namespace xb::opcheck

namespace xbt {

using namespace xb::opcheck;  // NOLINT: the tests speak the case library's vocabulary
namespace exact = xb::exact;

// The names of every device in xb::global_registry().
std::vector<std::string> device_names();

// Same shapes; non-finite values exactly where the reference has them (and equal there, unless
// `specials` admits any); NMSE within the tolerance.
testing::AssertionResult matches_reference(const RefArray& out, const RefArray& ref, double tolerance,
                                           Specials specials = Specials::Same);

// Parameterised over (device name, case); instantiate with XB_OP_CASES.
using OpParam = std::tuple<std::string, OpCase>;
class OpTest : public testing::TestWithParam<OpParam> {};
std::string op_param_name(const testing::TestParamInfo<OpParam>& info);
// `s` with every character that gtest does not allow in a test name replaced by '_'.
std::string test_name(std::string s);

}  // namespace xbt

// Runs every case of `cases` on every registered device, as <family>/OpTest.Matches/<device>_<case>.
#define XB_OP_CASES(family, cases)                                                                                 \
    INSTANTIATE_TEST_SUITE_P(family, OpTest,                                                                       \
                             testing::Combine(testing::ValuesIn(::xbt::device_names()), testing::ValuesIn(cases)), \
                             ::xbt::op_param_name)
