#include "cpu_kernels/gemv_rows.hpp"

#include <cstdlib>
#include <optional>
#include <string_view>

#include "core/cpu_identity.hpp"

namespace xb::cpu_kernels {

namespace {

std::optional<GemvRows> forced_walk(const char* forced) {
    if (forced == nullptr) return std::nullopt;
    const std::string_view v(forced);
    if (v == "1") return GemvRows::Single;
    if (v == "2") return GemvRows::Pairs;
    return std::nullopt;
}

}  // namespace

GemvRows choose_gemv_rows(std::string_view vendor, const char* forced) {
    return forced_walk(forced).value_or(vendor == "AuthenticAMD" ? GemvRows::Single : GemvRows::Pairs);
}

GemvRows gemv_rows() {
    static const GemvRows walk = choose_gemv_rows(host_cpu().vendor, std::getenv("XB_GEMV_ROWS"));
    return walk;
}

std::string gemv_rows_description() {
    std::string text = std::string("one-token products by ") + (gemv_rows() == GemvRows::Pairs ? "row pairs" : "single rows");
    if (const char* forced = std::getenv("XB_GEMV_ROWS")) {
        text += forced_walk(forced) ? " (XB_GEMV_ROWS)" : std::string(" (XB_GEMV_ROWS=") + forced + " is neither 1 nor 2)";
    }
    return text;
}

}  // namespace xb::cpu_kernels
