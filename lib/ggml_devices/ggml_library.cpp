#include "ggml_devices/ggml_library.hpp"

#include <dlfcn.h>
#include <ggml-backend.h>
#include <ggml.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace xb::ggml_devices {

namespace {

constexpr const char* kVariable = "XB_GGML_BACKENDS";

Status bad_library(const std::string& path, const std::string& why) {
    return Status(StatusCode::InvalidArgument, std::string(kVariable) + ": " + path + ": " + why);
}

// The dynamic loader's last error, without a trailing newline.
std::string loader_error() {
    const char* e = dlerror();
    return e == nullptr ? "unknown error" : std::string(e);
}

// Checks that `path` is a ggml backend library before ggml loads it: ggml_backend_load answers a
// bad file with a log line and nullptr only.
Status check_library(const std::string& path) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) return bad_library(path, "no such file");
    if (!S_ISREG(st.st_mode)) return bad_library(path, "not a file");
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) return bad_library(path, "cannot be loaded: " + loader_error());
    const bool is_backend = dlsym(handle, "ggml_backend_init") != nullptr;
    dlclose(handle);
    if (!is_backend) {
        return bad_library(path, "not a ggml backend library (it has no ggml_backend_init; build it with GGML_BACKEND_DL=ON)");
    }
    return Status::ok();
}

Status load_all() {
    const char* value = std::getenv(kVariable);
    if (value == nullptr) return Status::ok();
    const std::string_view list(value);
    size_t start = 0;
    while (start <= list.size()) {
        size_t end = list.find(':', start);
        if (end == std::string_view::npos) end = list.size();
        const std::string path(list.substr(start, end - start));
        start = end + 1;
        if (path.empty()) continue;
        XB_RETURN_IF_ERROR(check_library(path));
        if (ggml_backend_load(path.c_str()) == nullptr) {
            return bad_library(path, "ggml refused it (a backend of another ggml version, or one this machine cannot run)");
        }
    }
    return Status::ok();
}

// ggml's log lines are its own diagnostics: xbackend's statuses already report every failure in
// one line, so they are shown only when asked for (XB_GGML_LOG=1), prefixed "ggml: ".
void log_filter(ggml_log_level level, const char* text, void* user_data) {
    const bool shown = user_data != nullptr;
    if (!shown || level == GGML_LOG_LEVEL_DEBUG) return;
    std::fprintf(stderr, "%s%s", level == GGML_LOG_LEVEL_CONT ? "" : "ggml: ", text);
}

}  // namespace

Status load_backend_libraries() {
    route_ggml_logs();
    // Once per process: ggml's registry is process-wide, and a library is loaded only once.
    static const Status loaded = load_all();
    return loaded;
}

void route_ggml_logs() {
    const char* verbose = std::getenv("XB_GGML_LOG");
    static const bool routed =
        (ggml_log_set(log_filter, reinterpret_cast<void*>(static_cast<uintptr_t>(
                                     verbose != nullptr && std::string_view(verbose) == "1"))),
         true);
    static_cast<void>(routed);
}

}  // namespace xb::ggml_devices
