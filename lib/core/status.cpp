#include "core/status.hpp"

namespace xb {

const char* status_code_name(StatusCode code) {
    switch (code) {
        case StatusCode::Ok: return "Ok";
        case StatusCode::InvalidArgument: return "InvalidArgument";
        case StatusCode::OutOfRange: return "OutOfRange";
        case StatusCode::NotSupported: return "NotSupported";
        case StatusCode::OutOfMemory: return "OutOfMemory";
        case StatusCode::Aborted: return "Aborted";
        case StatusCode::NotFound: return "NotFound";
        case StatusCode::Internal: return "Internal";
    }
    return "Unknown";
}

std::string Status::to_string() const {
    if (is_ok()) return "Ok";
    return std::string(status_code_name(code_)) + ": " + message_;
}

void value_of_error(const Status& status) {
    std::fprintf(stderr, "xbackend: the value of a failed Result was used: %s\n", status.to_string().c_str());
    std::abort();
}

void check_failed(const char* expr, const char* file, int line, const char* msg) {
    std::fprintf(stderr, "xbackend: internal check failed: %s at %s:%d%s%s\n", expr, file, line,
                 msg ? ": " : "", msg ? msg : "");
    std::abort();
}

}  // namespace xb
