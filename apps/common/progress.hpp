// A progress line on stderr for work that takes more than a second, shown only when stderr is a
// terminal (never in logs or pipes), redrawn at most ten times a second and erased when done.
#pragma once

#include <chrono>
#include <string>

namespace xb::tools {

class Progress {
public:
    // total <= 0: open-ended work (shown as a count).
    Progress(std::string label, long total);
    ~Progress();
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;

    void update(long done);

private:
    std::string label_;
    long total_;
    bool enabled_;
    bool drawn_ = false;
    std::chrono::steady_clock::time_point start_;
    std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace xb::tools
