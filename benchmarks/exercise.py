"""Benchmark the exercise checker under a class: 60 students press "Check my code" within 10 s.

    python -m benchmarks.exercise [--students 60] [--spread 10] [--repeats 3] [--out benchmarks/exercise_results.json]

Each simulated student is a thread of one server process (as on Community Cloud, where every
session is a thread of one process) that waits a seeded random time in ``[0, spread)`` seconds,
then checks the reference solution with its own print, through one shared `Sandbox` exactly as the
page does. A fresh sandbox per repeat, so the worker's start and the self-test are in the first
students' latency, as after a server start. Reported per repeat, then as medians over repeats:

* latency from pressing the button to the report: p50, p95, max (target: p95 <= 20 s);
* how many got a passing report with their own output (target: all);
* the server process's CPU time per check (what the checks take from the app's own threads);
* the children's CPU time per check (forked per submission; reaped by the worker);
* while the checks run, how late a 50 ms timer in the server fires (p95): a stand-in for the
  responsiveness of the rest of the app.

Prints a table and writes the figures as JSON. Nothing asserts on time: targets are reported.
"""

from __future__ import annotations

import argparse
import inspect
import json
import platform
import random
import resource
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import core.exercise_solution as solution
from benchmarks.timing import percentile
from exercise.sandbox import Sandbox, check_submission

SOLUTION = inspect.getsource(solution)
TARGETS = {"p95_s": 20.0}


def timer_lateness(stop: threading.Event, period_s: float = 0.05) -> list[float]:
    """How late (s) a `period_s` sleep wakes up, repeatedly, until `stop` is set."""
    late: list[float] = []
    while not stop.is_set():
        t0 = time.monotonic()
        time.sleep(period_s)
        late.append(time.monotonic() - t0 - period_s)
    return late


def one_class(students: int, spread_s: float, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    arrivals = sorted(rng.uniform(0, spread_s) for _ in range(students))
    sandbox = Sandbox()
    stop = threading.Event()
    lateness: list[float] = []
    probe = threading.Thread(target=lambda: lateness.extend(timer_lateness(stop)))
    start = time.monotonic()
    cpu_self = time.process_time()
    cpu_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    probe.start()

    def student(i: int) -> tuple[float, bool]:
        time.sleep(max(0.0, start + arrivals[i] - time.monotonic()))
        pressed = time.monotonic()
        report = check_submission(SOLUTION + f"\nprint('student {i}')\n", sandbox)
        return time.monotonic() - pressed, report.passed and report.stdout.strip() == f"student {i}"

    with ThreadPoolExecutor(max_workers=students) as pool:
        results = list(pool.map(student, range(students)))
    stop.set()
    probe.join()
    server_cpu = time.process_time() - cpu_self
    sandbox.close()  # the worker exits and is reaped: its children's CPU is then counted
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    children_cpu = (after.ru_utime + after.ru_stime) - (cpu_children.ru_utime + cpu_children.ru_stime)
    latencies = [t for t, _ in results]
    return {
        "p50_s": statistics.median(latencies), "p95_s": percentile(latencies, 0.95), "max_s": max(latencies),
        "reports_ok": sum(ok for _, ok in results), "students": students,
        "server_cpu_ms_per_check": 1000 * server_cpu / students,
        "worker_and_children_cpu_ms_per_check": 1000 * children_cpu / students,
        "timer_late_p95_ms": 1000 * percentile(lateness, 0.95) if lateness else 0.0,
        "wall_s": time.monotonic() - start,
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.exercise", description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=60)
    parser.add_argument("--spread", type=float, default=10.0, help="seconds over which the presses arrive")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/exercise_results.json"))
    args = parser.parse_args()
    runs = [one_class(args.students, args.spread, seed) for seed in range(args.repeats)]
    keys = list(runs[0])
    medians = {k: statistics.median(r[k] for r in runs) for k in keys}
    print(f"{args.students} students pressing Check within {args.spread:g} s, {args.repeats} runs")
    print(f"{'figure':40} " + " ".join(f"{'run ' + str(i):>9}" for i in range(len(runs))) + f" {'median':>9}")
    for k in keys:
        print(f"{k:40} " + " ".join(f"{r[k]:9.2f}" for r in runs) + f" {medians[k]:9.2f}")
    print(f"target: p95 <= {TARGETS['p95_s']:g} s, every student gets a report")
    args.out.write_text(json.dumps({"machine": platform.platform(), "runs": runs, "medians": medians,
                                    "targets": TARGETS}, indent=1))
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
