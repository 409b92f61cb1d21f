"""A room pressing "Check my code" while the lecturer watches the exercise's class round: how fast the panel's counts
reach the lecturer, and what the round does to a check's answer time.

    python -m benchmarks.exercise_room [--students 300] [--checks 3] [--spread-s 180] [--processes 2]
                                       [--sqlite] [--out benchmarks/exercise_room_results.json]

The deployment recipe's several-process layout: `--processes` app processes behind nginx (`devtools.cluster`), the
poll's store in a PostgreSQL server of its own (`devtools.postgres`; `--sqlite`: a SQLite file in a temporary
directory instead). Each student is a websocket client (`benchmarks.protocol.Student`) on the exercise page; it
presses "Check my code" `checks` times at seeded moments within `spread_s`, the last time with the lesson's solution
and before that with one of two known mistakes (no scale by √d_k, softmax over the queries), so its latest result
only ever moves to "passed". The same students do this twice: first with no round open (the check's usual time),
then with a round open (written to the store directly, as the lecturer's Open does), while the lecturer's browser
(`benchmarks.lecturer.Presenter` on the exercise page, unlocked with the key) reruns its panel on the panel's timer
and notes every "Checked" and "Pass now" it shows.

Timed: a check's answer (from pressing to the end of its run), with and without the round; a check to the panel,
from its answer on the student's screen (by then its result is in the store) to the first panel showing a count
that holds it: the k-th student's first check to "Checked" of at least k, the k-th pass to "Pass now" of at least
k (a count never reached is infinitely slow). The server's CPU in each phase (the app processes and their checkers,
and the database's server apart). Accounting: every check answered without an exception, the round holding one row
per student with every check of the round phase counted, and the panel's last counts equal to the store's. Nothing
asserts on time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import json
import os
import platform
import random
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from streamlit.proto.WidgetStates_pb2 import WidgetState

import core.exercise_solution as solution
from benchmarks.lecturer import POLL_KEY, Presenter
from benchmarks.memory import tree
from benchmarks.poll_idle import quantiles
from benchmarks.protocol import Student, page_hashes, run_coroutine
from benchmarks.timing import python_loop_s
from devtools.cluster import Cluster
from devtools.postgres import PostgresServer, postgres_bin_dir
from poll import open_store, summarise
from ui.exercise_round import PAGE as ROUND_PAGE

SOLUTION = inspect.getsource(solution)
MISTAKES = (SOLUTION.replace(" / d_k**0.5", ""), SOLUTION.replace("dim=-1", "dim=-2"))
assert all(m != SOLUTION for m in MISTAKES), "the lesson's solution no longer holds the lines the mistakes swap"
#: The issue's target: the panel's counts reach the lecturer within this (p95).
TARGET_PANEL_P95_S = 2.0


def tree_cpu_s(root: int) -> float:
    """The CPU of `root` and its descendants, with the children they already reaped (utime, stime, cutime,
    cstime)."""
    total = 0.0
    for pid in tree(root):
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    return total


@dataclass
class Check:
    """One press of "Check my code": whether it was the solution, when it was sent and answered, its exceptions."""

    passes: bool
    sent_at: float
    answered_at: float
    exceptions: int


@dataclass
class CheckingStudent:
    """A student's browser on the exercise page: opened once, then checks with the editor's text it is given."""

    student: Student
    checks: list[Check] = field(default_factory=list)
    ids: tuple[str, str, str] = ("", "", "")  # the editor's and the button's widget ids, the button's fragment

    async def open_page(self) -> None:
        await self.student.connect()
        _, seen = await self.student.rerun()
        editor = next(v for k, v in seen.widgets.items() if k.startswith("Your `scaled_dot_product_attention`"))
        button, fragment = seen.widgets["Check my code"]
        self.ids = (editor[0], button, fragment)

    async def check(self, passes: bool, rng: random.Random) -> Check:
        editor, button, fragment = self.ids
        source = SOLUTION if passes else rng.choice(MISTAKES)
        self.student.extra_states = [WidgetState(id=editor, string_value=source),
                                     WidgetState(id=button, trigger_value=True)]
        sent_at = time.monotonic()
        _, seen = await self.student.rerun(fragment)
        done = Check(passes, sent_at, time.monotonic(), seen.exceptions)
        self.checks.append(done)
        return done


def to_panel(answers: list[float], shown: list[tuple[float, int]]) -> list[float]:
    """For the k-th of `answers` (times, in order), from it to the first number of at least k in `shown` after it."""
    waits = []
    for k, answered in enumerate(sorted(answers), start=1):
        seen = next((t for t, n in shown if n >= k and t >= answered), None)
        waits.append(float("inf") if seen is None else seen - answered)
    return waits


async def a_phase(class_: list[CheckingStudent], checks: int, spread_s: float, seed: int) -> list[Check]:
    """Every student checks `checks` times at seeded moments within `spread_s`, the last with the solution."""
    rng = random.Random(seed)
    start = time.monotonic()

    async def one(s: CheckingStudent) -> list[Check]:
        times = sorted(rng.uniform(0, spread_s) for _ in range(checks))
        done = []
        for i, at in enumerate(times):
            await asyncio.sleep(max(0.0, start + at - time.monotonic()))
            done.append(await s.check(i == checks - 1, rng))
        return done

    return [c for done in await asyncio.gather(*(one(s) for s in class_)) for c in done]


def answer_times(done: list[Check]) -> dict:
    return quantiles([c.answered_at - c.sent_at for c in done], len(done))


def one_room(url: str, cpu: dict[str, Callable[[], float]], page_hash: str, students: int, checks: int,
             spread_s: float, database_url: str | None, data: Path, key: str = POLL_KEY, seed: int = 0) -> dict:
    """The two phases on a running server (see the module's docstring): figures and the accounting."""
    store = open_store(database_url, data_directory=data)

    def cpu_now() -> dict[str, float]:
        return {what: read() for what, read in cpu.items()}

    def spent(before: dict[str, float], seconds: float) -> dict[str, float]:
        return {f"{what}_cpu_pct": round(100 * (read() - before[what]) / seconds, 1) for what, read in cpu.items()}

    async def room() -> dict:
        class_ = [CheckingStudent(Student(url, page_hash, random.Random(k))) for k in range(students)]
        for k in range(0, students, 20):  # open in batches, as a class arrives
            await asyncio.gather(*(s.open_page() for s in class_[k:k + 20]))
        before, t0 = cpu_now(), time.monotonic()
        usual = await a_phase(class_, checks, spread_s, seed)
        no_round_cpu = spent(before, time.monotonic() - t0)
        lecturer = Presenter(url, page_hash, key, quiz=ROUND_PAGE)
        await lecturer.open_page()
        opened = await asyncio.to_thread(store.open_exercise_round, ROUND_PAGE)
        all_seen = asyncio.Event()
        ticking = asyncio.create_task(lecturer.tick_until(float("inf"), all_seen.is_set))
        await asyncio.sleep(2.0)  # the processes' reading of the round's state (at most 0.5 s old) has it open
        before, t0 = cpu_now(), time.monotonic()
        in_round = await a_phase(class_, checks, spread_s, seed + 1)
        round_cpu = spent(before, time.monotonic() - t0)
        deadline = time.monotonic() + 30.0  # the panel's last counts: all there is, or what came within 30 s
        while time.monotonic() < deadline and not (
                lecturer.shown.get("Checked", [(0, 0)])[-1][1] >= students
                and lecturer.shown.get("Pass now", [(0, 0)])[-1][1] >= students):
            await asyncio.sleep(0.2)
        all_seen.set()
        await ticking
        for s in [*(s.student for s in class_), lecturer]:
            await s.ws.close()
        rows = await asyncio.to_thread(store.exercise_results, opened.id)
        summary = summarise(rows)
        firsts = [min(c.answered_at for c in s.checks[checks:]) for s in class_ if s.checks[checks:]]
        passes = [c.answered_at for c in in_round if c.passes]
        panel = {what: lecturer.shown.get(what, [(0, None)])[-1][1] for what in ("Checked", "Pass now")}
        return {"students": students, "checks_each": checks, "spread_s": spread_s,
                "no_round": {"checks": len(usual), "answer": answer_times(usual), **no_round_cpu},
                "round": {"checks": len(in_round), "answer": answer_times(in_round), **round_cpu},
                "first_check_to_panel": quantiles(to_panel(firsts, lecturer.shown.get("Checked", [])), len(firsts)),
                "pass_to_panel": quantiles(to_panel(passes, lecturer.shown.get("Pass now", [])), len(passes)),
                "panel": panel, "store": {"Checked": summary.checked, "Pass now": summary.passed,
                                          "attempts": sum(r.attempts for r in rows)},
                "exceptions": sum(c.exceptions for c in usual + in_round) + lecturer.exceptions,
                "exact": (len(rows) == summary.checked == students and summary.passed == students
                          and sum(r.attempts for r in rows) == len(in_round)
                          and panel == {"Checked": summary.checked, "Pass now": summary.passed}),
                "panel_ticks": len(lecturer.shown.get("Checked", []))}

    return run_coroutine(room())


@contextlib.contextmanager
def a_store(sqlite: bool) -> Iterator[tuple[str | None, Callable[[], float] | None]]:
    """The database's URL (None: SQLite in the data directory) and a reading of its server's CPU (None for SQLite)."""
    if sqlite:
        yield None, None
        return
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        raise SystemExit("PostgreSQL is not installed (apt-get install -y postgresql); or pass --sqlite")
    server = PostgresServer(bin_dir).start()
    try:
        postmaster = int((server.data / "postmaster.pid").read_text().split()[0])
        yield server.url, lambda: tree_cpu_s(postmaster)
    finally:
        server.remove()


def measure(students: int, checks: int, spread_s: float, processes: int = 2, sqlite: bool = False) -> dict:
    """One room on a new cluster (see the module's docstring)."""
    with a_store(sqlite) as (database_url, database_cpu), tempfile.TemporaryDirectory() as data:
        env = {"ATTENTION_POLL_DATA_DIR": data, "ATTENTION_PRESENTER_KEY": POLL_KEY}
        if database_url:
            env["ATTENTION_POLL_DATABASE_URL"] = database_url
        with Cluster(processes, env=env) as cluster:
            cpu = {"app": lambda: sum(tree_cpu_s(pid) for pid in cluster.app_pids)}
            if database_cpu is not None:
                cpu["database"] = database_cpu
            found = one_room(cluster.url, cpu, page_hashes(cluster.url)["exercise"], students, checks, spread_s,
                             database_url, Path(data))
    return {"database": "sqlite" if sqlite else "postgresql", "processes": processes, **found,
            "target_panel_p95_s": TARGET_PANEL_P95_S}


def report(found: dict) -> str:
    def q(figures: dict) -> str:
        return f"{figures['p50_s']:.2f}/{figures['p95_s']:.2f} s ({figures['reached']} of {figures['of']})"

    return (f"{found['students']} students x {found['checks_each']} checks over {found['spread_s']:g} s, "
            f"{found['processes']} processes, {found['database']}: check answered p50/p95 without a round "
            f"{q(found['no_round']['answer'])}, with the round {q(found['round']['answer'])}; to the panel: first "
            f"checks {q(found['first_check_to_panel'])}, passes {q(found['pass_to_panel'])} (target p95 "
            f"{found['target_panel_p95_s']:g} s); app CPU {found['no_round']['app_cpu_pct']} % of a core without, "
            f"{found['round']['app_cpu_pct']} % with the round"
            + (f" (database {found['no_round']['database_cpu_pct']} % / {found['round']['database_cpu_pct']} %)"
               if "database_cpu_pct" in found["round"] else "")
            + f"; panel {found['panel']}, store {found['store']}, exact: {found['exact']}, "
              f"exceptions: {found['exceptions']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--students", type=int, default=300)
    ap.add_argument("--checks", type=int, default=3)
    ap.add_argument("--spread-s", type=float, default=180.0)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--sqlite", action="store_true", help="the store in SQLite rather than PostgreSQL")
    ap.add_argument("--out", default=str(Path(__file__).with_name("exercise_room_results.json")))
    args = ap.parse_args()
    speed = python_loop_s()
    load = os.getloadavg()
    found = measure(args.students, args.checks, args.spread_s, args.processes, args.sqlite)
    found["machine"] = {"platform": platform.platform(), "python_loop_s": speed,
                        "load_before": load, "load_after": os.getloadavg()}
    print(report(found))
    Path(args.out).write_text(json.dumps(found, indent=2))
    print("written to", args.out)


if __name__ == "__main__":
    main()
