// Whether other work is running on the machine right now. On a busy 2-core machine `-t 2` took
// three times as long as `-t 1` (the OpenMP barrier waits on a thread that is not scheduled), so a
// timing tool warns when its threads and the other running tasks are more than the CPUs.
#pragma once

#include <string>

namespace xb::tools {

struct MachineLoad {
    int cpus = 0;            // CPUs this process may run on
    int others_running = 0;  // runnable tasks of other processes (the least of a few samples)
};

// Samples /proc/stat's procs_running a few times over about 50 ms (a zero load when unreadable).
MachineLoad sample_machine_load();

// "" when `threads` fit beside the others running, else one line for the tool to print (after
// "tool: warning: ") suggesting the threads that do fit.
std::string contention_warning(const MachineLoad& load, int threads);

}  // namespace xb::tools
