#include "cpu_kernels/gemv_rows.hpp"

#include <cstdlib>
#include <optional>
#include <string_view>

#include "core/cpu_identity.hpp"

namespace xb::cpu_kernels {

namespace {

std::optional<int> forced_rows(const char* forced) {
    if (forced == nullptr) return std::nullopt;
    const std::string_view v(forced);
    for (const auto& [name, rows] : {std::pair{"1", 1}, {"2", 2}, {"4", 4}, {"8", 8}}) {
        if (v == name) return rows;
    }
    return std::nullopt;
}

std::string rows_text(int rows) { return rows == 1 ? "single rows" : rows == 2 ? "row pairs" : std::to_string(rows) + " rows"; }

}  // namespace

GemvWalk choose_gemv_walk(std::string_view vendor, size_t l1d_bytes, const char* forced) {
    if (const std::optional<int> rows = forced_rows(forced)) return GemvWalk{*rows, *rows, 0};
    if (vendor != "AuthenticAMD") return GemvWalk{2, 2, 0};
    const size_t l1d = l1d_bytes != 0 ? l1d_bytes : size_t{32} << 10;
    return GemvWalk{1, 8, static_cast<int64_t>(l1d / 4 / sizeof(float))};
}

const GemvWalk& gemv_walk() {
    static const GemvWalk walk = choose_gemv_walk(host_cpu().vendor, host_cpu().caches.l1d_bytes, std::getenv("XB_GEMV_ROWS"));
    return walk;
}

std::string gemv_walk_description() {
    const GemvWalk& walk = gemv_walk();
    std::string text = "one-token products by " + rows_text(walk.rows);
    if (walk.long_rows != walk.rows) text += " to K = " + std::to_string(walk.short_k) + " and " + rows_text(walk.long_rows) + " beyond";
    if (const char* forced = std::getenv("XB_GEMV_ROWS")) {
        text += forced_rows(forced) ? " (XB_GEMV_ROWS)" : std::string(" (XB_GEMV_ROWS=") + forced + " is none of 1, 2, 4, 8)";
    }
    return text;
}

}  // namespace xb::cpu_kernels
