// The model fixtures of tests/data/models (scripts/model_fixtures.py) and tests/data/models/arch
// (scripts/arch_fixtures.py): where they are, and their manifests.
#pragma once

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "test_config_util.hpp"

namespace xb::config::testing {

// A file under tests/data/models ("arch/tiny-qwen3.gguf").
inline std::string model_path(const std::string& name) { return data_path("models/" + name); }

// The manifest of a fixture folder ("" or "arch/").
inline nlohmann::json read_manifest(const std::string& dir) {
    std::ifstream in(model_path(dir + "manifest.json"));
    return nlohmann::json::parse(in);
}

}  // namespace xb::config::testing
