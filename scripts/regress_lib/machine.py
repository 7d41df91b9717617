"""What a results file records about where it ran: machine, CPU, compiler, build, commit, date."""
import os
import platform
import re
import subprocess
from datetime import datetime, timezone
from pathlib import Path


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _cmake_cache(build_dir):
    """CMakeCache.txt entries (NAME:TYPE=VALUE) as {NAME: VALUE}; empty when the build has none."""
    entries = {}
    try:
        for line in (Path(build_dir) / "CMakeCache.txt").read_text().splitlines():
            m = re.match(r"([A-Za-z_0-9]+):[A-Z]+=(.*)", line)
            if m:
                entries[m.group(1)] = m.group(2)
    except OSError:
        pass
    return entries


def _compiler(build_dir):
    """Compiler id and version as CMake found them (the cache holds only the path, so read its probe)."""
    for probe in Path(build_dir, "CMakeFiles").glob("*/CMakeCXXCompiler.cmake"):
        text = probe.read_text()
        cid = re.search(r'set\(CMAKE_CXX_COMPILER_ID "([^"]*)"\)', text)
        ver = re.search(r'set\(CMAKE_CXX_COMPILER_VERSION "([^"]*)"\)', text)
        if cid and ver:
            return f"{cid.group(1)} {ver.group(1)}"
    return "unknown"


def _git(repo_root, *args):
    try:
        proc = subprocess.run(["git", *args], cwd=repo_root, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def machine_info(build_dir, repo_root):
    cache = _cmake_cache(build_dir)
    status = _git(repo_root, "status", "--porcelain", "--untracked-files=no")
    return {
        "host": platform.node(),
        "cpu_model": cpu_model(),
        "n_cpus": os.cpu_count(),
        "os": platform.platform(),
        "compiler": _compiler(build_dir),
        "build_type": cache.get("CMAKE_BUILD_TYPE", "unknown"),
        "commit": _git(repo_root, "rev-parse", "HEAD") or "unknown",
        # Uncommitted changes to tracked files: the figures are then not those of the commit alone.
        "dirty": bool(status) if status is not None else None,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
