// The parts of the config parser, one file each (internal to lib/config).
#pragma once

#include "config/config_spec.hpp"
#include "config/json_reader.hpp"

namespace xb::config::detail {

// "/tensors": leaf tensors, or for model builders overrides of the builder's tensors.
Status parse_tensors(const JsonReader& r, const Json& j, ConfigSpec& spec);
// A file name from a config, resolved against the config's directory (absolute names as they are).
std::string resolve_file_name(const std::string& base_dir, const std::string& file);
// The "file" member of j, resolved against the config's directory.
Result<std::string> read_file_name(const JsonReader& r, const Json& j, const std::string& path, const std::string& base_dir);
Result<InitSpec> parse_init(const JsonReader& r, const Json& j, const std::string& path, const std::string& base_dir);
// "/graph": an explicit list of ops, or a model builder.
Status parse_graph(const JsonReader& r, const Json& j, ConfigSpec& spec);
// "/placement".
Status parse_placement(const JsonReader& r, const Json& j, ConfigSpec& spec);

}  // namespace xb::config::detail
