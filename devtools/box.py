"""Community Cloud's box on this machine: a cgroup that gives the processes in it one core and 2.7 GB.

    with Box() as box:
        AppServer(box=box)  # the server and every child it starts run inside

Cloud runs an app in a container limited to about one CPU and 2.7 GB of memory. A benchmark that measures a class
on this 2-core machine puts the app's processes in such a box, so the server gets Cloud's CPU, and the simulated
students (the benchmark's own process, outside the box) the other core. The box is a cgroup: version 2 where the
unified hierarchy has the cpu and memory controllers, else version 1's cpu and memory hierarchies. Making one needs
root (or a delegated cgroup); `Box.available()` says whether this machine can.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
#: Cloud's limits: one core (CFS quota = period) and 2.7 GB.
CPU_PERIOD_US = 100_000
MEMORY_BYTES = 2_700_000_000


class BoxUnavailableError(RuntimeError):
    """This machine cannot make a cgroup with cpu and memory limits (not root, or no such controllers)."""


def _v2_root() -> Path | None:
    """The unified hierarchy's root where it offers both controllers (at /sys/fs/cgroup, or /sys/fs/cgroup/unified)."""
    for root in (CGROUP_ROOT, CGROUP_ROOT / "unified"):
        controllers = root / "cgroup.controllers"
        if controllers.exists() and {"cpu", "memory"} <= set(controllers.read_text().split()):
            return root
    return None


class Box:
    """A cgroup of `cores` CPUs and `memory_bytes`, removed on exit. `enter()` moves the calling process into it;
    `AppServer(box=...)` calls it in the child before `streamlit run` starts, so everything the app starts is
    inside too."""

    def __init__(self, cores: float = 1.0, memory_bytes: int = MEMORY_BYTES) -> None:
        self.cores, self.memory_bytes = cores, memory_bytes
        self.name = f"attention-box-{secrets.token_hex(4)}"
        self.dirs: list[Path] = []

    @staticmethod
    def available() -> bool:
        v1 = (CGROUP_ROOT / "cpu").is_dir() and (CGROUP_ROOT / "memory").is_dir()
        return os.geteuid() == 0 and (_v2_root() is not None or v1)

    def __enter__(self) -> Box:
        if not self.available():
            raise BoxUnavailableError("a box needs root and cgroup cpu and memory controllers (v1 or v2)")
        quota = int(self.cores * CPU_PERIOD_US)
        v2 = _v2_root()
        if v2 is not None:
            (v2 / "cgroup.subtree_control").write_text("+cpu +memory")
            box = v2 / self.name
            box.mkdir()
            self.dirs = [box]
            (box / "cpu.max").write_text(f"{quota} {CPU_PERIOD_US}")
            (box / "memory.max").write_text(str(self.memory_bytes))
        else:
            cpu, memory = CGROUP_ROOT / "cpu" / self.name, CGROUP_ROOT / "memory" / self.name
            cpu.mkdir()
            memory.mkdir()
            self.dirs = [cpu, memory]
            (cpu / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
            (cpu / "cpu.cfs_quota_us").write_text(str(quota))
            (memory / "memory.limit_in_bytes").write_text(str(self.memory_bytes))
        return self

    def enter(self) -> None:
        """Move this process (and so everything it starts from now on) into the box."""
        for directory in self.dirs:
            (directory / "cgroup.procs").write_text(str(os.getpid()))

    def throttled_s(self) -> float:
        """How long the box's processes wanted a CPU beyond the quota, in seconds, so far."""
        for directory in self.dirs:
            stat = directory / "cpu.stat"
            if stat.exists():
                fields = dict(line.split() for line in stat.read_text().splitlines())
                if "throttled_usec" in fields:
                    return int(fields["throttled_usec"]) / 1e6
                if "throttled_time" in fields:
                    return int(fields["throttled_time"]) / 1e9
        return float("nan")

    def __exit__(self, *exc: object) -> None:
        for directory in self.dirs:
            parent_procs = directory.parent / "cgroup.procs"
            for pid in (directory / "cgroup.procs").read_text().split():  # anything left: out, so the box can go
                try:
                    parent_procs.write_text(pid)
                except OSError:
                    pass  # it has exited meanwhile
            directory.rmdir()
