// Error model of xbackend (see README "Errors").
//
// Recoverable failures -- anything a user can cause with bad shapes, bad configs, exhausted memory or
// an op a backend does not support -- are reported as a Status or a Result<T>; they never abort.
// XB_CHECK is for programmer errors only (a broken internal invariant) and aborts with a message.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace xb {

enum class StatusCode {
    Ok,
    InvalidArgument,   // bad shapes, types, parameters, out-of-range views
    OutOfRange,        // reads or writes past the end of a tensor or buffer
    NotSupported,      // an op, type or feature that a backend does not have
    OutOfMemory,       // a buffer type could not provide the requested size
    Aborted,           // a computation stopped by its abort callback
    NotFound,          // a device, tensor or file that does not exist
    Internal,          // a failure inside a backend (driver error, ...)
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
public:
    Status() = default;
    Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

    static Status ok() { return {}; }

    bool is_ok() const { return code_ == StatusCode::Ok; }
    explicit operator bool() const { return is_ok(); }
    StatusCode code() const { return code_; }
    const std::string& message() const { return message_; }
    // "InvalidArgument: add: shapes [3,4] and [5] cannot be broadcast"
    std::string to_string() const;

private:
    StatusCode code_ = StatusCode::Ok;
    std::string message_;
};

// Aborts: Result::value() of an error, with the status's message.
[[noreturn]] void value_of_error(const Status& status);

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
public:
    Result(T value) : v_(std::move(value)) {}                  // NOLINT: implicit by design
    Result(Status status) : v_(std::move(status)) {            // NOLINT: implicit by design
        if (std::get<Status>(v_).is_ok()) {
            v_ = Status(StatusCode::Internal, "Result constructed from an Ok status without a value");
        }
    }

    bool is_ok() const { return std::holds_alternative<T>(v_); }
    explicit operator bool() const { return is_ok(); }

    Status status() const { return is_ok() ? Status::ok() : std::get<Status>(v_); }
    // The value; asking for the value of an error is a programmer error, which aborts with the
    // status's message (check is_ok() or use XB_ASSIGN_OR_RETURN first).
    T& value() & {
        check_has_value();
        return std::get<T>(v_);
    }
    const T& value() const& {
        check_has_value();
        return std::get<T>(v_);
    }
    T&& value() && {
        check_has_value();
        return std::get<T>(std::move(v_));
    }
    T* operator->() { return &value(); }
    T& operator*() & { return value(); }

private:
    void check_has_value() const {
        if (!is_ok()) value_of_error(std::get<Status>(v_));
    }
    std::variant<T, Status> v_;
};

[[noreturn]] void check_failed(const char* expr, const char* file, int line, const char* msg);

}  // namespace xb

#define XB_STATUS_CONCAT_INNER(a, b) a##b
#define XB_STATUS_CONCAT(a, b) XB_STATUS_CONCAT_INNER(a, b)

// Returns the status of `expr` from the enclosing function when it is not Ok.
#define XB_RETURN_IF_ERROR(expr)                                      \
    do {                                                              \
        ::xb::Status xb_status_tmp_ = (expr);                         \
        if (!xb_status_tmp_.is_ok()) return xb_status_tmp_;           \
    } while (0)

// `XB_ASSIGN_OR_RETURN(auto x, make_x());` unwraps a Result or returns its status.
#define XB_ASSIGN_OR_RETURN(lhs, expr) XB_ASSIGN_OR_RETURN_IMPL(XB_STATUS_CONCAT(xb_res_, __LINE__), lhs, expr)
#define XB_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
    auto tmp = (expr);                           \
    if (!tmp.is_ok()) return tmp.status();       \
    lhs = std::move(tmp).value()

// Programmer errors only: always on, aborts with the expression and location.
#define XB_CHECK(cond)                                                              \
    do {                                                                            \
        if (!(cond)) ::xb::check_failed(#cond, __FILE__, __LINE__, nullptr);        \
    } while (0)
#define XB_CHECK_MSG(cond, msg)                                                     \
    do {                                                                            \
        if (!(cond)) ::xb::check_failed(#cond, __FILE__, __LINE__, (msg));          \
    } while (0)
