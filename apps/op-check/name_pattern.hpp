// -p PATTERN: which case names to keep. A small glob language rather than std::regex (whose
// instantiation trips GCC 12's -Wmaybe-uninitialized under sanitizers): alternatives separated by
// '|', each a glob ('*' any run, '?' one character) found anywhere in the name, '^' and '$'
// anchoring it at the start or end. "f16|bf16", "^mul_mat_*_f32$", "rope_neox".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"

namespace xb::tools::opcheck {

class NamePattern {
public:
    // InvalidArgument for an empty alternative or a character no case name holds (case names are
    // letters, digits and '_').
    static Result<NamePattern> parse(std::string_view text);

    bool matches(std::string_view name) const;

private:
    std::vector<std::string> globs_;  // each made to match a whole name ('*' added where unanchored)
};

}  // namespace xb::tools::opcheck
