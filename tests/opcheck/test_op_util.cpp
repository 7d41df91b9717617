// The parameterised op conformance test (see op_test_util.hpp) and the multi-threaded CPU run.
#include <cctype>

#include "backend/registry.hpp"
#include "builtin/builtin_backends.hpp"
#include "op_test_util.hpp"

namespace xb::opcheck {

void PrintTo(const OpCase& c, std::ostream* os) { *os << c.name; }

}  // namespace xb::opcheck

namespace xbt {

testing::AssertionResult matches_reference(const RefArray& out, const RefArray& ref, double tolerance, Specials specials) {
    const std::string why = mismatch(out, ref, tolerance, specials);
    if (why.empty()) return testing::AssertionSuccess();
    return testing::AssertionFailure() << why;
}

std::vector<std::string> device_names() {
    std::vector<std::string> names;
    const xb::Registry& reg = xb::global_registry();
    // xbackend's devices: ggml's (foreign) are judged by op-check -b ggml:CPU against the same cases
    // (tests/tools/ggml_devices.sh), where ggml's own deviations from the references are findings.
    for (size_t i = 0; i < reg.dev_count(); ++i) {
        if (!reg.dev(i).is_foreign()) names.emplace_back(reg.dev(i).name());
    }
    return names;
}

std::string test_name(std::string s) {
    for (char& ch : s) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    }
    return s;
}

std::string op_param_name(const testing::TestParamInfo<OpParam>& info) {
    return test_name(std::get<0>(info.param) + "_" + std::get<1>(info.param).name);
}

TEST_P(OpTest, Matches) {
    const auto& [device, op_case] = GetParam();
    auto backend = xb::global_registry().init_by_name(device);
    ASSERT_TRUE(backend.is_ok()) << backend.status().to_string();
    const CaseRun run = run_case(op_case, **backend);
    if (!run.unsupported.empty()) GTEST_SKIP() << run.unsupported;
    ASSERT_TRUE(run.status.is_ok()) << run.status.to_string();
    EXPECT_TRUE(run.overrun.empty()) << run.overrun;
    EXPECT_TRUE(matches_reference(run.out, run.ref, op_case.tolerance, op_case.specials));
    RecordProperty("nmse", testing::PrintToString(nmse(run.out, run.ref)));
}

// --- the CPU backend on three threads ------------------------------------------------------------

namespace {

std::vector<OpCase> threaded_cases() {
    std::vector<OpCase> cases = matmul_cases();
    for (OpCase& c : attention_cases()) {
        if (c.name.starts_with("soft_max")) cases.push_back(std::move(c));
    }
    // Quantized products: columns quantized by every thread, then a barrier, then the dots.
    for (OpCase& c : quant_cases()) {
        if (c.name.starts_with("mul_mat") || c.name.starts_with("cast_f32")) cases.push_back(std::move(c));
    }
    // Expert products: pairs grouped by thread 0, then row blocks (or whole products) shared out.
    for (OpCase& c : moe_cases()) {
        if (c.name.starts_with("mul_mat_id")) cases.push_back(std::move(c));
    }
    return cases;
}

}  // namespace

TEST(OpThreads, CpuOnThreeThreadsMatchesReferenceAndOneThread) {
    auto threaded = xb::global_registry().init_by_name("CPU");
    auto single = xb::global_registry().init_by_name("CPU");
    ASSERT_TRUE(threaded.is_ok()) << threaded.status().to_string();
    ASSERT_TRUE(single.is_ok()) << single.status().to_string();
    ASSERT_TRUE((*threaded)->set_n_threads(3));
    ASSERT_TRUE((*single)->set_n_threads(1));
    for (const OpCase& c : threaded_cases()) {
        SCOPED_TRACE(c.name);
        const CaseRun three = run_case(c, **threaded);
        const CaseRun one = run_case(c, **single);
        ASSERT_TRUE(three.unsupported.empty() && one.unsupported.empty()) << three.unsupported;
        ASSERT_TRUE(three.status.is_ok()) << three.status.to_string();
        ASSERT_TRUE(one.status.is_ok()) << one.status.to_string();
        EXPECT_TRUE(matches_reference(three.out, three.ref, c.tolerance));
        // Threads only split the work: the two runs agree as closely as each agrees with the reference.
        EXPECT_TRUE(matches_reference(three.out, one.out, c.tolerance));
    }
}

// The quantized products hand out their row blocks from a counter in the backend's scratch, which
// outlives a compute: every product must start it again, or the second finds it spent and leaves
// its rows unwritten.
TEST(OpThreads, CpuRepeatsQuantizedProductsOnOneBackend) {
    auto threaded = xb::global_registry().init_by_name("CPU");
    ASSERT_TRUE(threaded.is_ok()) << threaded.status().to_string();
    ASSERT_TRUE((*threaded)->set_n_threads(3));
    int products = 0;
    for (const OpCase& c : quant_cases()) {
        if (!c.name.starts_with("mul_mat")) continue;
        SCOPED_TRACE(c.name);
        for (int round = 0; round < 2; ++round) {
            const CaseRun run = run_case(c, **threaded);
            ASSERT_TRUE(run.unsupported.empty()) << run.unsupported;
            ASSERT_TRUE(run.status.is_ok()) << run.status.to_string();
            EXPECT_TRUE(matches_reference(run.out, run.ref, c.tolerance)) << "round " << round;
        }
        ++products;
    }
    EXPECT_GT(products, 0);
}

}  // namespace xbt
