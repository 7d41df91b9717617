#include "sweep.hpp"

#include <charconv>

namespace xb::tools {

namespace {

constexpr int kMaxValues = 1024;

std::optional<int> parse_non_negative(std::string_view text) {
    int v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v < 0) return std::nullopt;
    return v;
}

Status bad(const std::string& text, const std::string& why) {
    return Status(StatusCode::InvalidArgument, "--sweep " + text + ": " + why +
                                                   " (expected offload_layers=0..4, or n_copies=1,2,4)");
}

}  // namespace

Result<Sweep> parse_sweep(const std::string& text) {
    const size_t eq = text.find('=');
    if (eq == std::string::npos) return bad(text, "no '='");
    Sweep sweep{text.substr(0, eq), {}};
    if (sweep.key != "offload_layers" && sweep.key != "n_copies") return bad(text, "unknown key '" + sweep.key + "'");
    const std::string values = text.substr(eq + 1);
    if (const size_t dots = values.find(".."); dots != std::string::npos) {
        const auto first = parse_non_negative(std::string_view(values).substr(0, dots));
        const auto last = parse_non_negative(std::string_view(values).substr(dots + 2));
        if (!first || !last || *first > *last) return bad(text, "the range must be FIRST..LAST with FIRST <= LAST");
        if (*last - *first >= kMaxValues) return bad(text, "more than " + std::to_string(kMaxValues) + " values");
        for (int v = *first; v <= *last; ++v) sweep.values.push_back(v);
    } else {
        size_t pos = 0;
        while (pos <= values.size()) {
            const size_t end = std::min(values.find(',', pos), values.size());
            const auto v = parse_non_negative(std::string_view(values).substr(pos, end - pos));
            if (!v) return bad(text, "'" + values.substr(pos, end - pos) + "' is not a non-negative integer");
            sweep.values.push_back(*v);
            pos = end + 1;
        }
    }
    if (sweep.key == "n_copies") {
        for (int v : sweep.values) {
            if (v < 1) return bad(text, "n_copies must be at least 1");
        }
    }
    return sweep;
}

void apply_sweep_value(const std::string& key, int value, config::ConfigSpec& spec) {
    if (key == "offload_layers") spec.placement.offload_layers = value;
    if (key == "n_copies") spec.placement.n_copies = value;
}

}  // namespace xb::tools
