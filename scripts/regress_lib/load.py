"""The load check: whether other work ran on the machine while a case was timed.

On a shared machine other processes take CPUs from the suite's threads; with OpenMP one thread
that is not scheduled holds up all the others at every barrier, so a case timed beside a compile
can be tens of times slower, far more than the calibration kernels move (a raw ratio of 72 with a
machine factor of 1.98 was seen). The calibration cannot correct that, so each timed case is
checked instead:

  graph-run samples the runnable tasks of other processes just before its timed computes (its
  JSON's `others_running`, the least of a few samples) and warns on stderr when they and its
  threads are more than the CPUs; `regress run` samples the same way once graph-run has exited.
  A case is timed *under load* when either sample, plus the threads, is more than the CPUs.

Such a case is timed again, up to `retries` times, `wait_s` apart, and the first measurement
taken without load is kept. When every one was under load, the fastest is kept (other work only
adds time) and the case is marked `"under_load": true`; compare then reports its timing without
gating it.
"""
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional


def _procs_running():
    """Runnable tasks on the whole machine now (this process included), or None when unknown."""
    try:
        for line in Path("/proc/stat").read_text().splitlines():
            if line.startswith("procs_running "):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def cpus():
    """The CPUs this process (and the tools it starts) may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def sample_others(samples=5, interval_s=0.01):
    """Runnable tasks of other processes: the least of SAMPLES readings (a task that runs only for a
    moment should not count, a steady competitor shows in each), as graph-run samples; None when
    /proc/stat cannot be read."""
    least = None
    for i in range(samples):
        if i:
            time.sleep(interval_s)
        n = _procs_running()
        if n is None:
            return None
        least = n - 1 if least is None else min(least, n - 1)  # minus this process, which is reading
    return max(0, least)


@dataclass
class LoadPolicy:
    """How `run` treats a case timed under load."""
    retries: int = 2                 # timings again, at most, before the case is marked
    wait_s: float = 2.0              # pause before each retry, for a burst of other work to pass
    sample: Optional[Callable[[], Optional[int]]] = None  # others running once graph-run exited (None: none taken)
    cpus: int = 0                    # the CPUs the tools may use (0: this process's)

    def cpu_count(self):
        return self.cpus or cpus()


def load_record(others_before, others_after, threads, n_cpus):
    """The run file's `load` object of one timing: the samples, threads and CPUs, and whether busy."""
    known = [n for n in (others_before, others_after) if n is not None]
    busy = bool(known) and max(known) + threads > n_cpus
    return {"others_before": others_before, "others_after": others_after, "threads": threads, "cpus": n_cpus,
            "busy": busy}


def plural(n, one, many):
    """'1 retry', '2 retries'."""
    return f"{n} {one if n == 1 else many}"


def busy_text(load):
    """'2 other tasks ran beside 2 threads on 2 CPUs', for the log and compare's notes."""
    known = [n for n in (load.get("others_before"), load.get("others_after")) if n is not None]
    return (f"{plural(max(known) if known else 0, 'other task', 'other tasks')} ran beside "
            f"{plural(load.get('threads', '?'), 'thread', 'threads')} on {load.get('cpus', '?')} CPUs")
