"""Where a server's time goes, sampled from outside with py-spy (a development requirement).

Two samplers run side by side on one process: one takes only the thread holding the interpreter lock (`--gil`:
where the CPU under the GIL goes), the other every thread, idle or not (`--idle`: where each thread waits). Both
write py-spy's "raw" (collapsed) format, a line per stack and its sample count, with the thread's name as the
stack's first frame; `summarise` sums a file by function, `by_thread` by thread. Neither pauses the process while
it reads its stacks (`--nonblocking`), so the sampling does not hold up the class it measures.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

RATE_HZ = 100


class Sampler:
    """`with Sampler(pid, out)`: py-spy records `pid` into `out` (GIL holder) and `out.idle` (every thread) until
    the block ends and the process exits (py-spy writes its files when the process it samples is gone)."""

    def __init__(self, pid: int, out: Path) -> None:
        self.pid, self.out = pid, out
        self.procs: list[subprocess.Popen] = []

    @staticmethod
    def idle_file(out: Path) -> Path:
        return out.with_name(out.name + ".idle")

    def __enter__(self) -> Sampler:
        py_spy = str(Path(sys.executable).with_name("py-spy"))
        for flag, out in (("--gil", self.out), ("--idle", self.idle_file(self.out))):
            self.procs.append(subprocess.Popen(
                [py_spy, "record", "--pid", str(self.pid), "--threads", flag, "--nonblocking", "--format", "raw",
                 "--rate", str(RATE_HZ), "--output", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        return self

    def wait(self, timeout_s: float = 60) -> None:
        for proc in self.procs:
            proc.wait(timeout_s)

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()


UNNAMED = "(unnamed)"


def thread_name(first_frame: str) -> str:
    """The name in py-spy's first frame, `thread (7141): busy-worker_7`; `UNNAMED` where py-spy found none, as for
    the main thread before the `threading` module is imported, `thread (7134)`."""
    match = re.fullmatch(r"thread \(\w+\)(?:: (.*))?", first_frame)
    if match is None:
        return first_frame
    return match.group(1) or UNNAMED


def _stacks(profile: Path):
    """(thread name, frames innermost last, samples) for each line of a raw profile."""
    for line in profile.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        thread, *frames = stack.split(";")
        yield thread_name(thread), frames, int(count)


def thread_kind(name: str) -> str:
    """A thread's name without the numbers that tell apart threads of one kind (`ThreadPoolExecutor-0_3`)."""
    return re.sub(r"[-_]?\d+", "", name) or name


def by_thread(profile: Path) -> Counter[str]:
    """Samples per kind of thread (`thread_kind`)."""
    threads: Counter[str] = Counter()
    for thread, _, n in _stacks(profile):
        threads[thread_kind(thread)] += n
    return threads


def summarise(profile: Path, top: int = 40, thread: str = "") -> None:
    """Print the samples per kind of thread, then the functions they were in: own time (the innermost frame) and
    inclusive time (anywhere on the stack), as shares of all samples (of the kind `thread` only, if given)."""
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for name, frames, n in _stacks(profile):
        if not frames or (thread and thread_kind(name) != thread):
            continue
        total += n
        own[frames[-1]] += n
        for frame in set(frames):
            inclusive[frame] += n
    threads = by_thread(profile)
    print(f"{threads.total()} samples; by thread:")
    for kind, n in threads.most_common(top):
        print(f"{100 * n / threads.total():6.1f}%  {kind}")
    print(f"{total} samples" + (f" of {thread}" if thread else ""))
    for title, counter in (("own", own), ("inclusive", inclusive)):
        print(f"--- {title}")
        for frame, n in counter.most_common(top):
            print(f"{100 * n / max(total, 1):6.1f}%  {frame}")
