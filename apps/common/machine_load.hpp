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

// "1 thread", "2 threads".
std::string threads_text(int n);

// "" when `threads` fit beside the others running, else one line for the tool to print (after
// "tool: warning: ") suggesting the threads that do fit.
std::string contention_warning(const MachineLoad& load, int threads);

struct ThreadChoice {
    int threads = 1;
    MachineLoad load;
    std::string warning;  // "" when the machine has room for them
};

// The threads of a timed run. Asked-for threads (-t, or OMP_NUM_THREADS) are kept, with a warning
// when the machine is too busy for them; otherwise the default (the physical cores) capped by the
// CPUs not already busy, with a warning saying so.
ThreadChoice choose_threads(int requested);

}  // namespace xb::tools
