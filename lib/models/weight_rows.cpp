#include "models/weight_rows.hpp"

#include <string>

namespace xb {

Status check_weight_rows(const char* builder, DType weight_type,
                         std::initializer_list<std::pair<const char*, int64_t>> row_sizes) {
    const int64_t block = blck_size(weight_type);
    std::string bad;
    int n_bad = 0;
    for (const auto& [name, size] : row_sizes) {
        if (size % block == 0) continue;
        bad += (n_bad++ ? " and " : "") + std::string(name) + " (" + std::to_string(size) + ")";
    }
    if (n_bad == 0) return Status::ok();
    return Status(StatusCode::InvalidArgument, std::string(builder) + ": weight_type " + dtype_name(weight_type) +
                                                   " stores rows in blocks of " + std::to_string(block) + " values; " +
                                                   bad + (n_bad > 1 ? " are not multiples of " : " is not a multiple of ") +
                                                   std::to_string(block));
}

}  // namespace xb
