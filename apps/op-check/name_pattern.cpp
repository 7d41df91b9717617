#include "name_pattern.hpp"

#include <algorithm>
#include <cctype>

#include "core/names.hpp"

namespace xb::tools::opcheck {

namespace {

bool allowed(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '*' || c == '?'; }

Result<std::string> alternative_glob(std::string_view alt, std::string_view whole) {
    const bool at_start = !alt.empty() && alt.front() == '^';
    if (at_start) alt.remove_prefix(1);
    const bool at_end = !alt.empty() && alt.back() == '$';
    if (at_end) alt.remove_suffix(1);
    if (alt.empty() || !std::all_of(alt.begin(), alt.end(), allowed)) {
        return Status(StatusCode::InvalidArgument,
                      "-p " + std::string(whole) + ": expected alternatives separated by '|' of letters, digits, '_', "
                      "'*' and '?', optionally anchored with ^ and $ (e.g. 'f16|bf16', '^mul_mat_*_f32$')");
    }
    return std::string(at_start ? "" : "*") + std::string(alt) + (at_end ? "" : "*");
}

}  // namespace

Result<NamePattern> NamePattern::parse(std::string_view text) {
    NamePattern p;
    size_t begin = 0;
    while (begin <= text.size()) {
        const size_t end = std::min(text.find('|', begin), text.size());
        XB_ASSIGN_OR_RETURN(std::string glob, alternative_glob(text.substr(begin, end - begin), text));
        p.globs_.push_back(std::move(glob));
        begin = end + 1;
    }
    return p;
}

bool NamePattern::matches(std::string_view name) const {
    return std::any_of(globs_.begin(), globs_.end(), [name](const std::string& g) { return glob_match(g, name); });
}

}  // namespace xb::tools::opcheck
