#include "progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace xb::tools {

Progress::Progress(std::string label, long total)
    : label_(std::move(label)), total_(total), enabled_(isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

Progress::~Progress() {
    if (drawn_) std::fprintf(stderr, "\r\033[K");  // erase the line
}

void Progress::update(long done) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - start_ < std::chrono::seconds(1) || now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    drawn_ = true;
    const double secs = std::chrono::duration<double>(now - start_).count();
    if (total_ > 0) {
        std::fprintf(stderr, "\r\033[K%s %ld/%ld (%.1f s)", label_.c_str(), done, total_, secs);
    } else {
        std::fprintf(stderr, "\r\033[K%s %ld (%.1f s)", label_.c_str(), done, secs);  // open-ended: no total
    }
    std::fflush(stderr);
}

}  // namespace xb::tools
