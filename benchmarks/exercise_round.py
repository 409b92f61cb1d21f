"""Benchmark what the exercise's class round adds to a "Check my code": the server's CPU to record one result.

    python -m benchmarks.exercise_round [--students 300] [--checks 3] [--repeats 3]
                                        [--database-url postgresql://...] [--out benchmarks/exercise_round.json]

A round is open on a page of its own; `students` students each check `checks` times, in a random order, each check's
outcome drawn at random from the checker's kinds (passed, failed with a mistake, did not finish). A record is what
the page does after its checker returned (`ui.exercise_round._send`, without Streamlit's session): read the round's
state through the process's `RoundStates` (its `VersionCache` at 0.5 s), hash the browser's token, and
`record_check` in one write. Timed per record in the calling thread's CPU (`time.thread_time`: what the server's
cores pay; the database's own work in PostgreSQL is another process's, reported apart as the wall time) and in wall
time. Reported per run and as medians: p50, p95 and max of each, and whether the round holds exactly one row per
student with every check counted. Against SQLite in a temporary directory, or the database at `--database-url`.
Nothing asserts on time.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.timing import percentile
from poll import CheckResult, RoundStates, VersionCache, exercise_state, open_store

PAGE = "exercise_round_benchmark"
OUTCOMES = (CheckResult("passed"), CheckResult("failed", 4, "scale_none"), CheckResult("failed", 3, "softmax_queries"),
            CheckResult("failed", 1, "load_error"), CheckResult("did_not_finish"))
#: The issue's budget: recording adds at most this much server CPU to a check.
TARGET_CPU_MS = 5.0


def one_run(database_url: str, students: int, checks: int, seed: int) -> dict:
    store = open_store(database_url)
    versions = VersionCache(store, 0.5)
    states = RoundStates(store, versions, read=lambda page: exercise_state(store.exercise_round(page)))
    opened = store.open_exercise_round(PAGE)
    hasher = store.voter_hasher()
    chooser = random.Random(seed)
    order = [s for s in range(students) for _ in range(checks)]
    chooser.shuffle(order)
    cpu_ms, wall_ms = [], []
    for s in order:
        result = chooser.choice(OUTCOMES)
        cpu, wall = time.thread_time(), time.perf_counter()
        if "-open" in states.state(PAGE):
            store.record_check(PAGE, hasher.voter(f"bench_student_{seed:03d}_{s:05d}_{'0' * 8}"), result)
        cpu_ms.append((time.thread_time() - cpu) * 1000)
        wall_ms.append((time.perf_counter() - wall) * 1000)
    rows = store.exercise_results(opened.id)
    store.close_exercise_round(opened.id)
    getattr(store, "close", lambda: None)()
    return {"records": len(order), "exact": len(rows) == students and sum(r.attempts for r in rows) == len(order),
            "cpu_ms": {"p50": round(percentile(cpu_ms, 0.5), 3), "p95": round(percentile(cpu_ms, 0.95), 3),
                       "max": round(max(cpu_ms), 3)},
            "wall_ms": {"p50": round(percentile(wall_ms, 0.5), 3), "p95": round(percentile(wall_ms, 0.95), 3),
                        "max": round(max(wall_ms), 3)}}


def measure(database_url: str | None = None, students: int = 300, checks: int = 3, repeats: int = 3) -> dict:
    """`repeats` runs and their medians (see the module's docstring)."""
    url = database_url or f"sqlite:///{tempfile.mkdtemp(prefix='bench-exercise-round-')}/poll.sqlite3"
    runs = [one_run(url, students, checks, seed) for seed in range(repeats)]
    median = {what: {q: round(statistics.median(r[what][q] for r in runs), 3) for q in ("p50", "p95", "max")}
              for what in ("cpu_ms", "wall_ms")}
    return {"database": "postgresql" if url.startswith("postgres") else "sqlite", "students": students,
            "checks": checks, "runs": runs, "median": median, "exact": all(r["exact"] for r in runs),
            "target_cpu_ms": TARGET_CPU_MS}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--students", type=int, default=300)
    ap.add_argument("--checks", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--database-url", default=None)
    ap.add_argument("--out", default=str(Path(__file__).with_name("exercise_round_results.json")))
    args = ap.parse_args()
    found = measure(args.database_url, args.students, args.checks, args.repeats)
    found["machine"] = {"platform": platform.platform()}
    for i, run in enumerate(found["runs"], start=1):
        print(f"run {i}: {run['records']} records, exact: {run['exact']}, CPU ms p50/p95/max "
              f"{run['cpu_ms']['p50']}/{run['cpu_ms']['p95']}/{run['cpu_ms']['max']}, wall ms p50/p95/max "
              f"{run['wall_ms']['p50']}/{run['wall_ms']['p95']}/{run['wall_ms']['max']}")
    m = found["median"]
    print(f"{found['database']}: a record's server CPU p50 {m['cpu_ms']['p50']} ms, p95 {m['cpu_ms']['p95']} ms "
          f"(budget {TARGET_CPU_MS:g} ms); wall p50 {m['wall_ms']['p50']} ms, p95 {m['wall_ms']['p95']} ms")
    Path(args.out).write_text(json.dumps(found, indent=2))
    print("written to", args.out)


if __name__ == "__main__":
    main()
