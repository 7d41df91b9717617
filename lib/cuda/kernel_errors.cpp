#include "cuda/kernel_errors.hpp"

namespace xb::cuda {

std::string describe_kernel_error(const KernelErrorRecord& record, const std::vector<std::string>& labels,
                                  const std::string& device_name) {
    const bool known_slot = record.slot >= 0 && static_cast<size_t>(record.slot) < labels.size();
    const std::string where = known_slot ? labels[static_cast<size_t>(record.slot)]
                                         : "an unknown node (slot " + std::to_string(record.slot) + ")";
    switch (record.kind) {
        case kKernelErrorNone: return {};
        case kKernelErrorIndexOutOfRange:
            return device_name + ": " + where + ": index " + std::to_string(record.value) + " out of range [0, " +
                   std::to_string(record.bound) + ")";
        default: break;
    }
    return device_name + ": " + where + ": kernel error " + std::to_string(record.kind);
}

}  // namespace xb::cuda
