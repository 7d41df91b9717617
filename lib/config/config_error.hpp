// Messages for bad configs: every one names the config file and the JSON pointer of the value at
// fault ("configs/x.json: /graph/7/args/1: unknown tensor 'foo' (known: a, b)"). The text helpers
// for names (excerpt, did_you_mean, glob_match, ...) are core/names.hpp's.
#pragma once

#include <string>
#include <string_view>

#include "core/names.hpp"
#include "core/status.hpp"

namespace xb::config {

// InvalidArgument "<source>: <path>: <message>" (the path is left out when empty).
Status config_error(std::string_view source, std::string_view path, std::string_view message);
// The same with another status code (NotFound for missing files and devices).
Status config_error(StatusCode code, std::string_view source, std::string_view path, std::string_view message);

// One JSON pointer segment: '~' and '/' escaped as RFC 6901 says.
std::string pointer_segment(std::string_view key);
// path + "/" + escaped key.
std::string child_path(std::string_view path, std::string_view key);
std::string child_path(std::string_view path, size_t index);

}  // namespace xb::config
