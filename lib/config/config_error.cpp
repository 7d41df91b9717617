#include "config/config_error.hpp"

namespace xb::config {

Status config_error(std::string_view source, std::string_view path, std::string_view message) {
    return config_error(StatusCode::InvalidArgument, source, path, message);
}

Status config_error(StatusCode code, std::string_view source, std::string_view path, std::string_view message) {
    std::string text(source);
    if (!path.empty()) text += (text.empty() ? "" : ": ") + std::string(path);
    if (!text.empty()) text += ": ";
    text += message;
    return Status(code, std::move(text));
}

std::string pointer_segment(std::string_view key) {
    std::string out;
    for (char c : key) {
        if (c == '~') {
            out += "~0";
        } else if (c == '/') {
            out += "~1";
        } else {
            out += c;
        }
    }
    return out;
}

std::string child_path(std::string_view path, std::string_view key) { return std::string(path) + "/" + pointer_segment(key); }
std::string child_path(std::string_view path, size_t index) { return std::string(path) + "/" + std::to_string(index); }

}  // namespace xb::config
