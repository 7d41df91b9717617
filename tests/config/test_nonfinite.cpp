// Outputs holding NaN or infinity (config/model_io.hpp): two backends that both give NaN compare as
// equal, so the tools' --nonfinite verdict counts the outputs themselves.
#include <gtest/gtest.h>

#include <string>

#include "config/model_io.hpp"
#include "test_config_util.hpp"

namespace xb::config {
namespace {

// A model whose weights are all NaN "passed" backend-compare: NaN equals NaN on both sides. The
// outputs are now counted (the tools' --nonfinite verdict reads this).
TEST(NonFinite, NaNWeightsGiveNaNOutputsThatAreCounted) {
    auto spec = load_config(testing::data_path("models/hostile/nan-weights.gguf"));
    ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
    auto model = build_model(*spec, global_registry());
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    auto placed = testing::compute_alone(std::move(model).value());
    ASSERT_TRUE(placed.is_ok()) << placed.status().to_string();
    auto found = nonfinite_outputs((*placed)->model);
    ASSERT_TRUE(found.is_ok()) << found.status().to_string();
    ASSERT_EQ(found->size(), 1u);
    EXPECT_EQ((*found)[0].nan, (*found)[0].count);
    EXPECT_GT((*found)[0].count, 0);

    auto good = load_config(testing::data_path("models/bad/good.gguf"));
    ASSERT_TRUE(good.is_ok());
    auto good_model = build_model(*good, global_registry());
    ASSERT_TRUE(good_model.is_ok());
    auto good_placed = testing::compute_alone(std::move(good_model).value());
    ASSERT_TRUE(good_placed.is_ok());
    EXPECT_TRUE(nonfinite_outputs((*good_placed)->model)->empty());
}

}  // namespace
}  // namespace xb::config
