#include "alloc/allocation_checker.hpp"

#include <algorithm>
#include <string>

#include "alloc/allocation_lifetimes.hpp"

namespace xb {

namespace {

std::string range_text(const StorageLifetime& s) {
    return "'" + s.tensor->display_name() + "' [" + std::to_string(s.first) + ", " + std::to_string(s.last) + "]";
}

}  // namespace

Status check_graph_allocation(const Graph& graph) {
    XB_ASSIGN_OR_RETURN(std::vector<StorageLifetime> storages, storage_lifetimes(graph));
    std::sort(storages.begin(), storages.end(), [](const StorageLifetime& x, const StorageLifetime& y) { return x.begin < y.begin; });
    // Sweep by address: only storages whose byte ranges overlap are compared.
    for (size_t i = 0; i < storages.size(); ++i) {
        const StorageLifetime& a = storages[i];
        for (size_t j = i + 1; j < storages.size() && storages[j].begin < a.end; ++j) {
            const StorageLifetime& b = storages[j];
            const bool live_together = a.first <= b.last && b.first <= a.last;
            if (!live_together || is_inplace_successor(a, b) || is_inplace_successor(b, a)) continue;
            return Status(StatusCode::Internal, "allocation check: " + range_text(a) + " and " + range_text(b) +
                                                    " are live at the same time and share bytes");
        }
    }
    return Status::ok();
}

}  // namespace xb
