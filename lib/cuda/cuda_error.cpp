#include "cuda/cuda_error.hpp"

#include "core/size_math.hpp"

namespace xb::cuda {

std::string_view short_source_path(std::string_view file) {
    for (std::string_view root : {"lib/", "tests/", "apps/"}) {
        if (file.substr(0, root.size()) == root) return file;
        const size_t at = file.rfind("/" + std::string(root));
        if (at != std::string_view::npos) return file.substr(at + 1);
    }
    const size_t slash = file.rfind('/');
    return slash == std::string_view::npos ? file : file.substr(slash + 1);
}

std::string format_call_error(std::string_view library, std::string_view error_name, std::string_view error_text,
                              const CallSite& site) {
    std::string text(library);
    text += " error ";
    text += error_name;
    text += " (";
    text += error_text;
    text += ") in `";
    text += site.statement ? site.statement : "?";
    text += "` at ";
    text += short_source_path(site.file ? site.file : "?");
    text += ":" + std::to_string(site.line);
    if (site.function != nullptr && site.function[0] != '\0') {
        text += " (";
        text += site.function;
        text += ")";
    }
    return text;
}

std::string format_bytes(size_t bytes) { return bytes_text(static_cast<double>(bytes)); }

}  // namespace xb::cuda
