// Reading a JSON config into a ConfigSpec. Syntax errors name the file, line and column; every
// other error names the file and the JSON pointer of the value at fault. Nothing is built here:
// names, kinds, counts and parameters are checked; shapes are checked when the graph is built.
#pragma once

#include <string>
#include <string_view>

#include "config/config_spec.hpp"
#include "core/status.hpp"

namespace xb::config {

// Reads and parses the file; its directory becomes the base of relative file names in it.
Result<ConfigSpec> load_config(const std::string& path);
// Parses `text`; `source` names it in messages, `base_dir` resolves the files it names.
Result<ConfigSpec> parse_config(std::string_view text, std::string source, std::string base_dir = ".");

}  // namespace xb::config
