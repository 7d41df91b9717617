#include "cuda/cuda_settings.hpp"

#include <charconv>

#include "backend/registry.hpp"

namespace xb::cuda {

namespace {

std::optional<int> parse_non_negative(std::string_view text) {
    int value = 0;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (text.empty() || ec != std::errc() || ptr != end || value < 0) return std::nullopt;
    return value;
}

std::optional<bool> parse_switch(std::string_view text) {
    if (text == "1" || text == "true" || text == "on") return true;
    if (text == "0" || text == "false" || text == "off") return false;
    return std::nullopt;
}

Status bad_value(std::string_view device, const DeviceParam& p, const char* accepted) {
    return Status(StatusCode::InvalidArgument, std::string(device) + ": " + p.key + "=" + p.value + ": expected " +
                                                   accepted);
}

}  // namespace

void CudaSettingsUpdate::apply_to(CudaSettings& settings) const {
    if (offload_min_batch) settings.offload_min_batch = *offload_min_batch;
    if (tf32) settings.tf32 = *tf32;
    if (graphs) settings.graphs = *graphs;
}

Result<CudaSettingsUpdate> parse_cuda_params(std::string_view params, std::string_view device_name) {
    XB_ASSIGN_OR_RETURN(std::vector<DeviceParam> items, parse_device_params(params));
    CudaSettingsUpdate update;
    for (const DeviceParam& p : items) {
        if (p.key == "offload_min_batch") {
            update.offload_min_batch = parse_non_negative(p.value);
            if (!update.offload_min_batch) return bad_value(device_name, p, "a non-negative integer");
        } else if (p.key == "tf32") {
            update.tf32 = parse_switch(p.value);
            if (!update.tf32) return bad_value(device_name, p, "0 or 1");
        } else if (p.key == "graphs") {
            update.graphs = parse_switch(p.value);
            if (!update.graphs) return bad_value(device_name, p, "0 or 1");
        } else {
            return Status(StatusCode::InvalidArgument, std::string(device_name) + ": unknown parameter '" + p.key +
                                                           "' (known: offload_min_batch, tf32, graphs)");
        }
    }
    return update;
}

std::string format_cuda_settings(const CudaSettings& settings) {
    return "offload_min_batch=" + std::to_string(settings.offload_min_batch) + ",tf32=" + (settings.tf32 ? "1" : "0") +
           ",graphs=" + (settings.graphs ? "1" : "0");
}

}  // namespace xb::cuda
