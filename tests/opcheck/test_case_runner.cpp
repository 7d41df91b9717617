// The case runner's input bytes (opcheck/case_runner.hpp): perf mode makes a case's inputs once
// and sets them on every backend it times, so they must be, byte for byte, what each backend's own
// preparation stores, for every case (random valid blocks of the read-only formats, quantized
// weights, integer indices, rounded halves).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "backend/registry.hpp"
#include "backend/tensor_io.hpp"
#include "builtin/builtin_backends.hpp"
#include "opcheck/case_runner.hpp"
#include "opcheck/cases.hpp"

namespace xb::opcheck {
namespace {

std::vector<std::byte> stored_bytes(const Tensor& t) {
    std::vector<std::byte> b(t.nbytes());
    EXPECT_TRUE(tensor_get(t, b.data(), 0, b.size()).is_ok());
    return b;
}

TEST(CaseRunner, InputBytesAreWhatPrepareStoresForEveryCase) {
    auto cpu = global_registry().init_by_name("CPU");
    ASSERT_TRUE(cpu.is_ok()) << cpu.status().to_string();
    for (uint64_t seed : {uint64_t{0}, uint64_t{12345}}) {
        for (const OpCase& c : all_cases()) {
            auto for_bytes = CaseGraph::build(c);
            auto for_prepare = CaseGraph::build(c);
            ASSERT_TRUE(for_bytes.is_ok() && for_prepare.is_ok()) << c.name;
            auto bytes = input_bytes(*for_bytes, seed);
            ASSERT_TRUE(bytes.is_ok()) << c.name << ": " << bytes.status().to_string();
            auto prepared = PreparedCase::prepare(std::move(*for_prepare), **cpu, seed);
            ASSERT_TRUE(prepared.is_ok()) << c.name << ": " << prepared.status().to_string();
            const auto& inputs = (*prepared)->graph().builder().inputs();
            ASSERT_EQ(inputs.size(), bytes->per_input.size()) << c.name;
            for (size_t i = 0; i < inputs.size(); ++i) {
                EXPECT_TRUE(stored_bytes(*inputs[i].tensor) == bytes->per_input[i]) << c.name << " input " << i;
            }
        }
    }
}

TEST(CaseRunner, PreparedWithInputBytesComputesTheSameOutput) {
    auto cpu = global_registry().init_by_name("CPU");
    ASSERT_TRUE(cpu.is_ok());
    int checked = 0;
    for (const OpCase& c : all_cases()) {
        if (c.name != "mul_mat_batch7_q4_K" && c.name != "get_rows_q4_K" && c.name != "mul_mat_gemv_iq2_xxs") continue;
        auto graph = CaseGraph::build(c);
        ASSERT_TRUE(graph.is_ok());
        auto bytes = input_bytes(*graph, 7);
        ASSERT_TRUE(bytes.is_ok());
        auto own_graph = CaseGraph::build(c);
        ASSERT_TRUE(own_graph.is_ok());
        auto with = PreparedCase::prepare_with(std::move(*graph), **cpu, *bytes);
        auto own = PreparedCase::prepare(std::move(*own_graph), **cpu, 7);
        ASSERT_TRUE(with.is_ok() && own.is_ok()) << c.name;
        EXPECT_TRUE((*with)->inputs().empty());
        ASSERT_TRUE((*with)->compute().is_ok() && (*own)->compute().is_ok());
        auto a = (*with)->output();
        auto b = (*own)->output();
        ASSERT_TRUE(a.is_ok() && b.is_ok());
        EXPECT_EQ(a->values(), b->values()) << c.name;
        ++checked;
    }
    EXPECT_EQ(checked, 3);

    // Bytes of another case are refused, not set.
    const std::vector<OpCase> cases = all_cases();
    auto one = CaseGraph::build(cases.front());
    auto other = CaseGraph::build(cases.back());
    ASSERT_TRUE(one.is_ok() && other.is_ok());
    InputBytes wrong;
    wrong.per_input.resize((*other).builder().inputs().size() + 1);
    EXPECT_FALSE(PreparedCase::prepare_with(std::move(*one), **cpu, wrong).is_ok());
}

}  // namespace
}  // namespace xb::opcheck
