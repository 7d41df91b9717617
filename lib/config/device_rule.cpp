// A placement rule's name matching: globs (configs' "pattern") and regular expressions (configs'
// "regex" and graph-run's --override-tensor, which follow llama.cpp's -ot: a search, not a whole match).
#include <regex>

#include "config/config_spec.hpp"
#include "core/names.hpp"

namespace xb::config {

bool DeviceRule::matches(std::string_view name) const {
    if (!regex) return glob_match(pattern, name);
    // Compiled per call: rules are few and matched once per weight or node when a model is placed.
    const std::regex re(pattern, std::regex::ECMAScript);
    return std::regex_search(name.begin(), name.end(), re);
}

std::optional<std::string> DeviceRule::regex_problem(const std::string& pattern) {
    try {
        const std::regex re(pattern, std::regex::ECMAScript);
        return std::nullopt;
    } catch (const std::regex_error& e) {
        return std::string(e.what());
    }
}

std::string DeviceRule::pattern_path() const {
    if (path.empty() || path.front() != '/') return path;  // a command-line option names itself
    return path + (regex ? "/regex" : "/pattern");
}

}  // namespace xb::config
