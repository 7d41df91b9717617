#include "sweep.hpp"

#include <charconv>
#include <cmath>
#include <sstream>

#include "cli.hpp"
#include "core/message_text.hpp"

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
                                                   " (expected offload_layers=0..4, n_copies=1,2,4 or split.ratios=3:1,1:1)");
}

// "3:1" -> {3, 1}: non-negative numbers with a positive sum.
std::optional<std::vector<double>> parse_ratios(const std::string& text) {
    std::vector<double> ratios;
    double total = 0;
    for (const std::string& item : split_on(text, ':')) {
        double v = 0;
        const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
        if (item.empty() || ec != std::errc() || end != item.data() + item.size() || !(v >= 0) || !std::isfinite(v)) {
            return std::nullopt;
        }
        ratios.push_back(v);
        total += v;
    }
    if (total <= 0) return std::nullopt;
    return ratios;
}

}  // namespace

Result<Sweep> parse_sweep(const std::string& text) {
    const size_t eq = text.find('=');
    if (eq == std::string::npos) return bad(text, "no '='");
    Sweep sweep{text.substr(0, eq), {}, {}};
    if (sweep.key != "offload_layers" && sweep.key != "n_copies" && sweep.key != "split.ratios") {
        return bad(text, "unknown key " + quoted_name(sweep.key));
    }
    const std::string values = text.substr(eq + 1);
    if (sweep.key == "split.ratios") {
        for (const std::string& item : split_on(values, ',')) {
            const auto ratios = parse_ratios(item);
            if (!ratios) return bad(text, quoted_name(item) + " is not a list of ratios (non-negative numbers joined by ':', not all 0)");
            sweep.ratio_sets.push_back(*ratios);
        }
        if (sweep.ratio_sets.size() > kMaxValues) return bad(text, "more than " + std::to_string(kMaxValues) + " values");
        return sweep;
    }
    if (const size_t dots = values.find(".."); dots != std::string::npos) {
        const auto first = parse_non_negative(std::string_view(values).substr(0, dots));
        const auto last = parse_non_negative(std::string_view(values).substr(dots + 2));
        if (!first || !last || *first > *last) return bad(text, "the range must be FIRST..LAST with FIRST <= LAST");
        if (*last - *first >= kMaxValues) return bad(text, "more than " + std::to_string(kMaxValues) + " values");
        for (int v = *first; v <= *last; ++v) sweep.values.push_back(v);
    } else {
        for (const std::string& item : split_on(values, ',')) {
            const auto v = parse_non_negative(item);
            if (!v) return bad(text, quoted_name(item) + " is not a non-negative integer");
            sweep.values.push_back(*v);
        }
    }
    if (sweep.key == "n_copies") {
        for (int v : sweep.values) {
            if (v < 1) return bad(text, "n_copies must be at least 1");
        }
    }
    return sweep;
}

std::string Sweep::text(size_t i) const {
    if (key != "split.ratios") return std::to_string(values.at(i));
    std::ostringstream out;
    for (size_t k = 0; k < ratio_sets.at(i).size(); ++k) out << (k ? ":" : "") << ratio_sets[i][k];
    return out.str();
}

nlohmann::ordered_json Sweep::json(size_t i) const {
    return key == "split.ratios" ? nlohmann::ordered_json(ratio_sets.at(i)) : nlohmann::ordered_json(values.at(i));
}

Status Sweep::apply(size_t i, config::ConfigSpec& spec) const {
    if (key == "offload_layers") spec.placement.offload_layers = values.at(i);
    if (key == "n_copies") spec.placement.n_copies = values.at(i);
    if (key == "split.ratios") {
        if (!spec.placement.split) {
            return Status(StatusCode::InvalidArgument, "--sweep split.ratios: the config has no placement.split to sweep");
        }
        const size_t devices = spec.placement.split->devices.size();
        if (ratio_sets.at(i).size() != devices) {
            return Status(StatusCode::InvalidArgument, "--sweep split.ratios=" + text(i) + ": give one ratio per device of the split (" +
                                                           std::to_string(devices) + ")");
        }
        spec.placement.split->ratios = ratio_sets[i];
    }
    return Status::ok();
}

}  // namespace xb::tools
