// The model fixtures of tests/data/models (scripts/model_fixtures.py) and tests/data/models/arch
// (scripts/arch_fixtures.py): where they are, and their manifests.
#pragma once

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/npy.hpp"
#include "test_config_util.hpp"

namespace xb::config::testing {

// A file under tests/data/models ("arch/tiny-qwen3.gguf").
inline std::string model_path(const std::string& name) { return data_path("models/" + name); }

// The manifest of a fixture folder ("" or "arch/").
inline nlohmann::json read_manifest(const std::string& dir) {
    std::ifstream in(model_path(dir + "manifest.json"));
    return nlohmann::json::parse(in);
}

// The values of a float32 .npy file under tests/data/models (a reference's logits), in its order;
// empty, with a test failure, when it cannot be read.
inline std::vector<float> npy_values(const std::string& file) {
    auto a = read_npy(model_path(file));
    EXPECT_TRUE(a.is_ok()) << a.status().to_string();
    if (!a.is_ok()) return {};
    EXPECT_EQ(a->type, DType::F32) << file;
    std::vector<float> v(static_cast<size_t>(a->nelements()));
    std::memcpy(v.data(), a->data.data(), v.size() * sizeof(float));
    return v;
}

}  // namespace xb::config::testing
