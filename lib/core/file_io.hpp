// Opening files with errors that say why: each message names the file, what could not be done and
// the operating system's reason ("w.gguf: cannot open the GGUF file: Permission denied"), so that a
// user can tell a wrong path from a folder, a permission or a full disk.
#pragma once

#include <fstream>
#include <string>

#include "core/status.hpp"

namespace xb {

// The operating system's text for an errno value ("No such file or directory"); thread-safe.
std::string os_error_text(int err);

// "PATH: ACTION: REASON", REASON from `err` (an errno value; 0 gives the message without a reason).
// NotFound when the file or a folder on its path is missing (ENOENT, ENOTDIR), else `code`.
Status file_error(const std::string& path, const std::string& action, int err, StatusCode code = StatusCode::InvalidArgument);

// `path` opened for reading in binary mode, or "PATH: cannot open the WHAT: REASON" (a folder is
// refused here: on Linux it opens, and only its first read fails).
Result<std::ifstream> open_for_reading(const std::string& path, const std::string& what);
// `path` created, or emptied, for writing in binary mode, or "PATH: cannot create the WHAT: REASON".
Result<std::ofstream> open_for_writing(const std::string& path, const std::string& what);

// After a stream on `path` failed: "PATH: cannot read the WHAT: REASON" (or "cannot write"), with
// errno's reason when the failed call left one. Call it right after the failure.
Status read_error(const std::string& path, const std::string& what);
Status write_error(const std::string& path, const std::string& what);

}  // namespace xb
