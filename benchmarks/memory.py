"""Memory as Streamlit Community Cloud counts it: the app's whole process tree, under one lecturer and under a class.

    python -m benchmarks.memory [--students 60] [--minutes 2] [--hog-pairs 3] [--pages transformer_block]
                                [--out benchmarks/memory_results.json]

Cloud limits an app's container, so everything the server starts counts: the server, the checker's warm worker
(`exercise.zygote`, a second Python with PyTorch) and the children it forks, one per "Check my code". A sampler reads
the tree from /proc every `SAMPLE_S` seconds during the run and sums, over its processes:

* PSS (proportional set size, ``/proc/PID/smaps_rollup``): a page shared by n processes counts 1/n in each, so the
  sum counts each page once, as a container's memory accounting does (it also counts the page cache of files read,
  which neither figure here includes);
* RSS, which counts a shared page once per process that maps it (an over-estimate, the figure ``ps`` shows).

Two scenarios, each on a fresh `streamlit run` (`devtools.appserver`), students speaking Streamlit's websocket
protocol as in `benchmarks.load`:

* one lecturer: every page of the router in turn with a few slider steps (the real model's page included), then
  "Check my code" once on the exercise page;
* a class: `--students` stepping sliders over every page for `--minutes`, as in `benchmarks.load`, and as many more
  sessions on the exercise page each pressing "Check my code" once at a random moment of the run with the reference
  solution; `--hog-pairs` times, two of them press it at the same moment with code that copies every object the
  child inherited (``gc.get_objects``, so the child's copy-on-write pages grow as far as Python lets them) and then
  fills the sandbox's memory budget, holding it until the time limit: the worst two children at once.

Reported per scenario: the tree's peak PSS and RSS, the server's and the worker's alone, the most processes seen at
once, and checks passed. Against Cloud's limits (`CLOUD_GUARANTEED_BYTES`, `CLOUD_LIMIT_BYTES`) it also gives the
worst case the limits allow: the server's and the worker's peak plus `DEFAULT_PARALLEL` children, each at the
sandbox's budget plus the worker's whole anonymous memory (what copy-on-write could duplicate at most).
Nothing asserts on it: the figures go to docs/performance.md and the README.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import platform
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path


import core.exercise_solution as solution
from benchmarks.new_settings import chosen_pages
from benchmarks.protocol import Student, page_hashes, run_coroutine
from benchmarks.students import empty_results, student_session
from devtools.appserver import AppServer
from exercise.limits import CLOUD_GUARANTEED_BYTES, CLOUD_LIMIT_BYTES, MEMORY_BUDGET_BYTES
from exercise.sandbox import DEFAULT_PARALLEL

SAMPLE_S = 0.2
MB = 1e6
SOLUTION = inspect.getsource(solution)
#: Copies what the child inherited (every object's reference count is written), then fills the budget and holds it.
HOG = """import gc
inherited = gc.get_objects()
hoard = []
try:
    while True:
        hoard.append(b"x" * (8 * 2**20))
except MemoryError:
    pass
while True:
    pass
"""
PASS_MARK = ":green[:material/check_circle:]"
FAIL_MARK = ":red[:material/cancel:]"


def children_of() -> dict[int, list[int]]:
    """Every process's children, from each one's parent id in /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    return children


def tree(root: int) -> list[int]:
    """`root` and all its descendants."""
    kids = children_of()
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(kids.get(pid, []))
    return found


def rollup(pid: int) -> dict[str, int]:
    """A process's ``smaps_rollup`` in bytes (empty if it is gone)."""
    figures = {}
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
            name, value, *_ = line.split()
            figures[name.rstrip(":")] = int(value) * 1024
    except (OSError, ValueError):
        return {}
    return figures


@dataclass
class Peaks:
    """The largest figures the sampler saw (bytes), and how many processes at most."""

    tree_pss: int = 0
    tree_rss: int = 0
    server_pss: int = 0
    server_and_worker_pss: int = 0
    worker_rss: int = 0
    worker_anonymous: int = 0
    processes: int = 0
    samples: int = 0
    series: list[tuple[float, int]] = field(default_factory=list)  # (seconds, tree PSS) every sample


def sample_tree(server_pid: int, peaks: Peaks, stop: threading.Event, t0: float) -> None:
    """Until `stop`: sum the tree's PSS and RSS every `SAMPLE_S`, keeping the peaks."""
    while not stop.is_set():
        pids = tree(server_pid)
        figures = {pid: rollup(pid) for pid in pids}
        worker = next((pid for pid in children_of().get(server_pid, []) if pid in figures), None)
        pss = sum(f.get("Pss", 0) for f in figures.values())
        peaks.tree_pss = max(peaks.tree_pss, pss)
        peaks.tree_rss = max(peaks.tree_rss, sum(f.get("Rss", 0) for f in figures.values()))
        server = figures[server_pid].get("Pss", 0) if figures.get(server_pid) else 0
        peaks.server_pss = max(peaks.server_pss, server)
        if worker is not None and figures[worker]:
            peaks.server_and_worker_pss = max(peaks.server_and_worker_pss, server + figures[worker].get("Pss", 0))
            peaks.worker_rss = max(peaks.worker_rss, figures[worker].get("Rss", 0))
            peaks.worker_anonymous = max(peaks.worker_anonymous, figures[worker].get("Anonymous", 0))
        else:
            peaks.server_and_worker_pss = max(peaks.server_and_worker_pss, server)
        peaks.processes = max(peaks.processes, len(pids))
        peaks.samples += 1
        peaks.series.append((round(time.monotonic() - t0, 1), pss))
        stop.wait(SAMPLE_S)


async def press_check(url: str, page_hash: str, source: str, arrive_s: float, outcome: list[str]) -> None:
    """One student: open the exercise page, put `source` in the editor, press "Check my code" once."""
    await asyncio.sleep(arrive_s)
    student = Student(url, page_hash, random.Random(0))
    try:
        await student.connect()
        seen = await student.check_code(source)
        text = " ".join(seen.markdown)
        outcome.append("passed" if PASS_MARK in text and FAIL_MARK not in text else
                       "failed" if FAIL_MARK in text else "no report")
    except (TimeoutError, OSError, StopIteration, KeyError) as exc:
        outcome.append(f"error: {type(exc).__name__}")
    finally:
        if student.ws is not None:
            await student.ws.close()


async def lecturer(url: str, hashes: dict[str, str], steps: int) -> list[str]:
    """Every page in turn with `steps` slider steps, then one check."""
    for path, page_hash in hashes.items():
        if path == "exercise":
            continue
        student = Student(url, page_hash, random.Random(1))
        await student.connect()
        try:
            _, seen = await student.rerun()
            student.absorb(seen)
            for _ in range(steps if student.sliders else 0):
                _, seen = await student.rerun(student.step_slider("jump"))
                student.absorb(seen)
        finally:
            await student.ws.close()
    outcome: list[str] = []
    await press_check(url, hashes["exercise"], SOLUTION, 0.0, outcome)
    return outcome


def class_pages(hashes: dict[str, str], pages: Sequence[str] | None = None) -> list[str]:
    """The url paths the class's slider students are spread over: every page but the exercise (whose students press
    "Check my code" instead), or only those of `pages` (`benchmarks.new_settings.chosen_pages`)."""
    return sorted(p for p in chosen_pages(hashes, pages) if p != "exercise")


async def a_class(url: str, hashes: dict[str, str], students: int, minutes: float, hog_pairs: int,
                  seed: int, pages: Sequence[str] | None = None) -> list[str]:
    """`students` stepping sliders as in `benchmarks.load` (on `pages` only, if given), `students` checks of the
    solution, `hog_pairs` pairs of hogs pressing at the same moment; all within `minutes`."""
    rng = random.Random(seed)
    run_s = minutes * 60
    end_at = time.monotonic() + run_s
    pages = class_pages(hashes, pages)
    results = empty_results()
    outcome: list[str] = []
    checks = [press_check(url, hashes["exercise"], SOLUTION + f"\nprint('student {k}')\n",
                          rng.uniform(0, 0.8 * run_s), outcome) for k in range(students)]
    hogs = [press_check(url, hashes["exercise"], HOG, (k + 1) * run_s / (hog_pairs + 1), outcome)
            for k in range(hog_pairs) for _ in range(2)]
    sliders = [student_session(url, hashes[pages[k % len(pages)]], seed * 1000 + k, rng.uniform(0, 5), end_at,
                               results) for k in range(students)]
    await asyncio.gather(*sliders, *checks, *hogs)
    return outcome + [f"slider session failed: {f}" for f in results["failed"]]


def measure(scenario: str, students: int, minutes: float, hog_pairs: int, steps: int, seed: int,
            pages: Sequence[str] | None = None) -> dict:
    """One scenario on a fresh server, sampled from its start to its end."""
    with AppServer() as server:
        peaks = Peaks()
        stop = threading.Event()
        t0 = time.monotonic()
        sampler = threading.Thread(target=sample_tree, args=(server.proc.pid, peaks, stop, t0), daemon=True)
        sampler.start()
        hashes = page_hashes(server.url)
        if scenario == "lecturer":
            outcome = run_coroutine(lecturer(server.url, hashes, steps))
        else:
            outcome = run_coroutine(a_class(server.url, hashes, students, minutes, hog_pairs, seed, pages))
        time.sleep(2 * SAMPLE_S)
        stop.set()
        sampler.join()
    return summary(scenario, peaks, outcome, time.monotonic() - t0)


def summary(scenario: str, peaks: Peaks, outcome: list[str], wall_s: float) -> dict:
    worst = peaks.server_and_worker_pss + DEFAULT_PARALLEL * (MEMORY_BUDGET_BYTES + peaks.worker_anonymous)
    return {
        "scenario": scenario, "wall_s": round(wall_s, 1), "samples": peaks.samples,
        "tree_pss_peak_mb": peaks.tree_pss / MB, "tree_rss_peak_mb": peaks.tree_rss / MB,
        "server_pss_peak_mb": peaks.server_pss / MB, "server_and_worker_pss_peak_mb": peaks.server_and_worker_pss / MB,
        "worker_rss_peak_mb": peaks.worker_rss / MB, "worker_anonymous_mb": peaks.worker_anonymous / MB,
        "processes_peak": peaks.processes,
        "worst_case_mb": worst / MB,
        "cloud_guaranteed_mb": CLOUD_GUARANTEED_BYTES / MB, "cloud_limit_mb": CLOUD_LIMIT_BYTES / MB,
        "checks": {k: outcome.count(k) for k in sorted(set(outcome))},
        "series": peaks.series,
    }


def table(runs: list[dict]) -> str:
    keys = [k for k in runs[0] if k.endswith(("_mb", "_peak", "wall_s"))]
    lines = [f"{'figure':34}" + "".join(f"{r['scenario']:>14}" for r in runs)]
    lines += [f"{k:34}" + "".join(f"{r[k]:14.0f}" for r in runs) for k in keys]
    lines += [f"{'checks':34}" + "".join(f"{json.dumps(r['checks']):>14}" for r in runs)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.memory", description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=60)
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--hog-pairs", type=int, default=3)
    parser.add_argument("--lecturer-steps", type=int, default=3, help="slider steps per page for the lecturer")
    parser.add_argument("--scenarios", nargs="+", choices=("lecturer", "class"), default=["lecturer", "class"])
    parser.add_argument("--pages", nargs="+", help="class: the url paths of the pages its slider students are spread "
                                                   "over (home: the landing page); default: every page but the exercise")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/memory_results.json"))
    args = parser.parse_args()
    runs = [measure(s, args.students, args.minutes, args.hog_pairs, args.lecturer_steps, seed=0, pages=args.pages)
            for s in args.scenarios]
    print(f"Python {platform.python_version()}, {os.cpu_count()} CPUs; class: {args.students} students stepping "
          f"sliders and {args.students} checks over {args.minutes:g} min, {args.hog_pairs} pairs of hogs")
    print(table(runs))
    args.out.write_text(json.dumps({"args": vars(args) | {"out": str(args.out)}, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
