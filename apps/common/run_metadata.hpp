// What every JSON report says about the run that made it (llama-bench's columns): the tool, its
// commit and build, the machine's CPU and the kernel set it ran, threads, GPUs, seed, the config
// (path and a hash of its bytes) and the date, so that two saved reports can be told apart and
// compared fairly.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "cli.hpp"

namespace xb::tools {

nlohmann::ordered_json run_metadata(const CommonOptions& options);

// FNV-1a (64 bits) of a file's bytes as 16 hex digits; "" when it cannot be read.
std::string file_hash(const std::string& path);

}  // namespace xb::tools
