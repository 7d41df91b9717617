#include <algorithm>
#include <charconv>
#include <limits>

#include "backend/host_threads.hpp"
#include "blas/blas_backend.hpp"
#include "blas/openblas.hpp"

namespace xb::blas {

namespace {

constexpr const char* kKnownKeys = "threads, min_batch";

// The whole of `text` as an integer in [lo, hi].
std::optional<int64_t> parse_int(std::string_view text, int64_t lo, int64_t hi) {
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi) return std::nullopt;
    return v;
}

Status bad_value(const std::string& key, const std::string& value, const char* what) {
    return Status(StatusCode::InvalidArgument, "BLAS: " + key + " must be " + what + ", got '" + value + "'");
}

}  // namespace

Result<BlasOptions> parse_blas_options(std::string_view params) {
    XB_ASSIGN_OR_RETURN(auto items, parse_device_params(params));
    BlasOptions options;
    for (const DeviceParam& p : items) {
        if (p.key == "threads" || p.key == "n_threads") {
            const auto v = parse_int(p.value, 1, std::numeric_limits<int>::max());
            if (!v) return bad_value(p.key, p.value, "a positive integer");
            options.n_threads = static_cast<int>(*v);
        } else if (p.key == "min_batch") {
            const auto v = parse_int(p.value, 0, std::numeric_limits<int>::max());
            if (!v) return bad_value(p.key, p.value, "a non-negative integer");
            options.min_batch = *v;
        } else {
            return Status(StatusCode::InvalidArgument,
                          "BLAS: unknown parameter '" + p.key + "' (known: " + kKnownKeys + ")");
        }
    }
    return options;
}

BlasDevice::BlasDevice(BackendReg& reg, Device& host)
    : Device(reg), host_(&host), description_(openblas_description()), n_threads_(default_host_threads()) {}

DeviceCaps BlasDevice::caps() const {
    DeviceCaps c;
    // Buffers over caller memory are the CPU device's (host memory is all the BLAS device uses).
    c.buffer_from_host_ptr = host_->caps().buffer_from_host_ptr;
    return c;
}

Status BlasDevice::configure(std::string_view params) {
    XB_ASSIGN_OR_RETURN(BlasOptions options, parse_blas_options(params));
    if (options.n_threads) n_threads_.store(*options.n_threads);
    if (options.min_batch) min_batch_.store(*options.min_batch);
    return Status::ok();
}

std::string BlasDevice::settings() const {
    return "threads=" + std::to_string(n_threads()) + ",min_batch=" + std::to_string(min_batch());
}

Result<std::unique_ptr<Backend>> BlasDevice::init_backend(std::string_view params) {
    XB_ASSIGN_OR_RETURN(BlasOptions options, parse_blas_options(params));
    if (options.min_batch) {
        return Status(StatusCode::InvalidArgument,
                      "BLAS: min_batch is a device setting (Device::configure), not a backend one");
    }
    return std::unique_ptr<Backend>(std::make_unique<BlasBackend>(*this, options.n_threads.value_or(0)));
}

Result<std::unique_ptr<Buffer>> BlasDevice::buffer_from_host_ptr(void* ptr, size_t size, size_t max_tensor_size) {
    return host_->buffer_from_host_ptr(ptr, size, max_tensor_size);
}

bool BlasDevice::supports_op(const Tensor& op) const {
    if (op.op == Op::None || op_is_view(op.op)) return true;
    if (!matmul_supported(op)) return false;
    if (op.op != Op::MulMat) return true;
    // Small products are faster on the CPU backend than through conversion and sgemm's setup.
    const int64_t min = min_batch();
    return op.ne[0] >= min && op.ne[1] >= min && op.src[0]->ne[0] >= min;
}

void register_blas_backend(Registry& registry) {
    Device* host = registry.dev_by_name("CPU");
    if (host == nullptr || registry.reg_by_name("BLAS") != nullptr) return;
    BackendReg& reg = registry.add(std::make_unique<BackendReg>("BLAS"));
    reg.add_device(std::make_unique<BlasDevice>(reg, *host));
}

}  // namespace xb::blas
