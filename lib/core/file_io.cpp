#include "core/file_io.hpp"

#include <cerrno>
#include <filesystem>
#include <system_error>

namespace xb {

std::string os_error_text(int err) { return std::generic_category().message(err); }

Status file_error(const std::string& path, const std::string& action, int err, StatusCode code) {
    if (err == ENOENT || err == ENOTDIR) code = StatusCode::NotFound;
    return Status(code, path + ": " + action + (err != 0 ? ": " + os_error_text(err) : ""));
}

Result<std::ifstream> open_for_reading(const std::string& path, const std::string& what) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) return file_error(path, "cannot open the " + what, EISDIR);
    errno = 0;
    std::ifstream in(path, std::ios::binary);
    // libstdc++ opens with open(2), whose errno is the reason; none left means the path is empty.
    if (!in) return file_error(path, "cannot open the " + what, errno != 0 ? errno : ENOENT);
    errno = 0;  // so that read_error sees only what the reads leave
    return in;
}

Result<std::ofstream> open_for_writing(const std::string& path, const std::string& what) {
    errno = 0;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) return file_error(path, "cannot create the " + what, errno != 0 ? errno : ENOENT);
    errno = 0;
    return out;
}

Status read_error(const std::string& path, const std::string& what) {
    return file_error(path, "cannot read the " + what, errno);
}

Status write_error(const std::string& path, const std::string& what) {
    return file_error(path, "cannot write the " + what, errno, StatusCode::Internal);
}

}  // namespace xb
