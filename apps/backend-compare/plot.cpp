#include "plot.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "cli.hpp"

extern char** environ;

namespace xb::tools {

namespace {

constexpr const char* kScript = "scripts/compare_plot.py";
constexpr int kNoMatplotlib = 3;  // compare_plot.py --check: matplotlib cannot be imported

// The interpreter: $XB_PYTHON3, else Debian's /usr/bin/python3 (scripts/setup installs
// python3-matplotlib for it, as scripts/regress uses it), else python3 on the PATH.
std::string python() {
    const char* p = std::getenv("XB_PYTHON3");
    if (p != nullptr && *p != '\0') return p;
    return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
}

struct Finished {
    int code = -1;       // exit status; -1 when it did not start or did not exit
    std::string errors;  // what it wrote on stderr
};

// Runs argv[0] (searched on the PATH) with stderr captured; stdout is left to ours.
Finished run(const std::vector<std::string>& args) {
    Finished out;
    int pipe_fds[2];
    if (pipe(pipe_fds) != 0) return out;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
    posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_t pid = 0;
    const int spawned = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(pipe_fds[1]);
    char buf[512];
    for (ssize_t n; (n = read(pipe_fds[0], buf, sizeof buf)) > 0;) out.errors.append(buf, static_cast<size_t>(n));
    close(pipe_fds[0]);
    if (spawned != 0) return out;
    int status = 0;
    if (waitpid(pid, &status, 0) == pid && WIFEXITED(status)) out.code = WEXITSTATUS(status);
    return out;
}

// The last line the script wrote, without its own "compare_plot: " prefix.
std::string last_line(std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    text = text.substr(text.rfind('\n') + 1);
    const std::string prefix = "compare_plot: ";
    return text.rfind(prefix, 0) == 0 ? text.substr(prefix.size()) : text;
}

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

Status check_plot(const std::string& path) {
    if (!ends_with(path, ".png") && !ends_with(path, ".svg")) {
        return Status(StatusCode::InvalidArgument, "--plot " + path + ": the file must end in .png or .svg");
    }
    const std::string script = find_repository_file(kScript);
    if (script.empty()) {
        return Status(StatusCode::NotFound, std::string("--plot needs ") + kScript +
                                                " (in the repository or an installed copy), which is not there");
    }
    const Finished checked = run({python(), script, "--check"});
    if (checked.code == kNoMatplotlib) {
        return Status(StatusCode::NotFound,
                      "--plot needs matplotlib for " + python() + " (Debian: apt-get install python3-matplotlib)");
    }
    if (checked.code != 0) {
        return Status(StatusCode::NotFound, "--plot needs " + python() + " to run " + script +
                                                (checked.errors.empty() ? "" : ": " + last_line(checked.errors)));
    }
    return Status::ok();
}

Status draw_plot(const nlohmann::ordered_json& report, const std::string& title, const std::string& path) {
    char name[] = "/tmp/backend-compare-plot-XXXXXX";
    const int fd = mkstemp(name);
    if (fd < 0) return Status(StatusCode::Internal, "--plot: cannot make a temporary file for the report");
    close(fd);
    {
        std::ofstream out(name);
        out << report.dump();
    }
    const Finished drawn = run({python(), find_repository_file(kScript), name, path, "--title", title});
    std::remove(name);
    if (drawn.code != 0) {
        return Status(StatusCode::Internal, "--plot " + path + ": " +
                                                (drawn.errors.empty() ? "the plot script failed" : last_line(drawn.errors)));
    }
    return Status::ok();
}

}  // namespace xb::tools
