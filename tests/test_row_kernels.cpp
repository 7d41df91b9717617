// The row kernels (flash attention's dot and axpy over f32/f16/bf16 rows) of every instruction set
// this CPU runs, against float64, on odd lengths that leave vector tails.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "host/row_kernels.hpp"

namespace xb::host {
namespace {

// n random values stored as type t (as bytes) and the values each element holds after rounding.
struct Row {
    std::vector<std::byte> bytes;
    std::vector<double> values;
};

Row random_row(DType t, int64_t n, std::mt19937& rng) {
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    Row r;
    r.bytes.resize(static_cast<size_t>(n) * type_size(t));
    for (int64_t i = 0; i < n; ++i) {
        std::byte* p = r.bytes.data() + static_cast<size_t>(i) * type_size(t);
        store_from_f32(t, p, dist(rng));
        r.values.push_back(load_as_f32(t, p));
    }
    return r;
}

TEST(RowKernels, DotAndAxpyOfEverySetMatchFloat64) {
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (Isa isa : supported_isas()) {
        const RowKernels& table = row_kernels(isa);
        for (DType t : {DType::F32, DType::F16, DType::BF16}) {
            const int index = static_cast<int>(*row_type(t));
            for (int64_t n : {0, 1, 7, 8, 16, 37, 130}) {
                SCOPED_TRACE(std::string(isa_name(isa)) + " " + dtype_name(t) + " n=" + std::to_string(n));
                const Row row = random_row(t, n, rng);
                std::vector<float> q(static_cast<size_t>(n));
                for (float& x : q) x = dist(rng);
                double want = 0.0;
                for (size_t i = 0; i < q.size(); ++i) want += q[i] * row.values[i];
                EXPECT_NEAR(table.dot[index](q.data(), row.bytes.data(), n), want, 1e-5 * static_cast<double>(n + 1));

                std::vector<float> acc = q;
                const float s = 0.75f;
                table.axpy[index](acc.data(), s, row.bytes.data(), n);
                for (size_t i = 0; i < acc.size(); ++i) EXPECT_NEAR(acc[i], q[i] + 0.75 * row.values[i], 1e-6) << i;
            }
        }
    }
    EXPECT_FALSE(row_type(DType::Q4_0).has_value());
}

}  // namespace
}  // namespace xb::host
