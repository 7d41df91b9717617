#include "builtin/environment.hpp"

#include <charconv>
#include <cstdlib>
#include <string>

#include "builtin/builtin_backends.hpp"
#include "core/isa.hpp"
#include "core/message_text.hpp"
#if defined(XB_HAVE_GGML)
#include "ggml_devices/ggml_library.hpp"
#endif

namespace xb {

namespace {

Status bad_variable(const char* name, std::string_view value, const std::string& why) {
    return Status(StatusCode::InvalidArgument, std::string(name) + "=" + name_text(value) + ": " + why);
}

}  // namespace

Result<std::optional<int>> environment_integer(const char* name, int min, int max, std::string_view fallback_text) {
    const char* text = std::getenv(name);
    if (text == nullptr) return std::optional<int>();
    const std::string_view value(text);
    const std::string range = std::to_string(min) + " to " + std::to_string(max) + "; unset: " + std::string(fallback_text);
    long long n = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (value.empty() || end != value.data() + value.size() || ec == std::errc::invalid_argument) {
        return bad_variable(name, value, "not an integer (" + range + ")");
    }
    if (ec == std::errc::result_out_of_range || n < min || n > max) return bad_variable(name, value, "out of range (" + range + ")");
    return std::optional<int>(static_cast<int>(n));
}

Status check_environment() {
    XB_RETURN_IF_ERROR(environment_integer("XB_SIM_DEVICES", 0, kMaxSimDevices, std::to_string(kDefaultSimDevices)).status());
    XB_RETURN_IF_ERROR(environment_integer("XB_SCHED_DEBUG", 0, 2, "0").status());
    if (const char* isa = std::getenv("XB_CPU_ISA"); isa != nullptr && !isa_from_name(isa)) {
        return bad_variable("XB_CPU_ISA", isa, "not a kernel set (scalar, avx2 or avx512; unset: the best the CPU runs)");
    }
#if defined(XB_HAVE_GGML)
    XB_RETURN_IF_ERROR(ggml_devices::load_backend_libraries());
#else
    if (const char* libs = std::getenv("XB_GGML_BACKENDS"); libs != nullptr && *libs != 0) {
        return bad_variable("XB_GGML_BACKENDS", libs, "this build has no ggml devices (configure with XB_GGML=ON)");
    }
#endif
    return Status::ok();
}

}  // namespace xb
