"""A lecture hall on one server: simulated students speaking Streamlit's own websocket protocol.

    python -m benchmarks.load [--students 60] [--minutes 2] [--arrival 5] [--repeats 1] [--processes 1 2]
                              [--machines 2] [--out benchmarks/load_results.json] [--profile FILE]

No browser: each student is a websocket client (the `websockets` package Streamlit already depends on) that
sends the `BackMsg` protobufs the front end sends and reads the `ForwardMsg`s back. Students arrive within
`--arrival` seconds, spread over every page of the router, open their page, then make slider steps with
1–3 s pauses until the time is up. A step is what the browser sends for a slider inside a page's fragment:
a rerun of that fragment only, with every widget's state and the new query string. Before they arrive, the
lecturer trains each page among theirs that shows its controls only once trained (the decoder's), as before class
(`benchmarks.protocol.train_before_class`).

A student whose page has a quiz also asks the class poll's route for the round's state every 2 s, as its
browser does (`ui.poll_watch`). With ``--poll-round`` a lecturer, in presenter mode on the scaled-attention page,
keeps a round of the poll open for the whole run, its panel rerunning every second.

A first visit starts with a GET of the page's HTML, as in a browser, and the websocket is opened with the cookies
that came with it; with ``--front-end`` it first fetches the front end's files too, as a browser that has never
opened the app does. With ``--processes 1 2`` each
repeat runs one `streamlit run` process, then two behind nginx (`devtools.cluster`, which routes by that cookie),
and the table puts the layouts side by side. With ``--machines 2`` each layout's processes are spread over two
"machines", network namespaces behind one nginx, the poll on PostgreSQL in a third (`devtools.hosts`, as root): the
department's recipe of docs/deployment.md on one computer.

Reported (per repeat; medians over repeats):

* step latency, from sending the step to the server's ``script_finished``: p50, p95, max (a run that the
  server ends early for another, such as an ``st.rerun``, is followed to the end of the run that replaces it);
* first visit, from the page's GET to the first run's ``script_finished``: p50, p95;
* the app processes' CPU time per step and first visit (all their threads, from /proc), and the largest
  process's peak RSS;
* exception boxes sent, and sessions that failed (no answer, a closed connection, or an error status);
* behind nginx: its answers with a 5xx status (``nginx_5xx``), the times it took an app process out of service
  (``taken_out``: every process is alive throughout, so the target is 0) and its errors about the processes, by
  kind (``upstream_errors``, in the JSON);
* cross-talk: two extra students on the worked example, seeds 1 and 2, each step their own seed slider and
  must each get back the share link for their own seed.
* the machine's speed just before the run: how long a fixed pure-Python loop takes
  (`benchmarks.timing.python_loop_s`). This shared machine's speed changes from hour to hour, and CPU per
  step with it; compare runs alongside this figure, or alternate A and B.

With ``--profile FILE``, `py-spy` (a development requirement) samples the (first) app process for the whole
run (`benchmarks.profiling`): the thread holding the interpreter lock into FILE (where the server's CPU goes),
every thread, idle or not, into FILE.idle (where each thread waits). Both are in the "collapsed" format (a line
per stack and its sample count) for a flame-graph tool; ``python -m benchmarks.load --summarise FILE [--thread
MainThread]`` sums one by thread and by function.

With ``--steps N`` each student leaves after N steps; with ``--box`` the one process runs in Community Cloud's
box (`devtools.box`: a cgroup of one core and 2.7 GB, root only), the students outside it. The table also gives
the wait before each step's run started (from sending the step to the server's ``new_session``, so the part of
the step spent before the script starts), the steps answered per second over the run, and the share of a core
the server and the simulated students (this process) used, so a saturated client is seen rather than measured.

``--regimes storm`` is the train storm (`benchmarks.train_storm`): ``--trainers`` students press Train, each at a
setting of their own, on the ``--train-pages``, while ``--students`` others open and step the other pages; ``--pin``
runs the server on one core (``taskset``). Its figures are its own: trainings finished, time to trained, the wait in
line, the longest a trainer heard nothing, the others' steps and opens, CPU and the process tree's memory.

Targets (issue #24, 60 students on one process): p50 <= 250 ms, p95 <= 1 s, CPU <= 20 ms per step,
0 exceptions, 0 failed sessions, RSS <= 1 GB, no cross-talk. Nothing asserts on time: the table says
which targets are met.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import platform
import random
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.front_end import recorded_files
from benchmarks.hall_report import layout_name, summary_of, table
from benchmarks.lecturer import PAGE, POLL_KEY, QUESTION, QUIZ, Presenter
from benchmarks.new_settings import new_settings_cpu, solo_table
from benchmarks.profiling import Sampler, summarise
from benchmarks.protocol import cpu_s, page_hashes, page_sliders, peak_rss_mb, run_coroutine, train_before_class
from benchmarks.students import cross_talk, empty_results, random_link, student_session
from benchmarks.timing import percentile, python_loop_s
from benchmarks.train_storm import DEADLINE_S, TRAIN_PAGES, main_storm
from devtools.appserver import AppServer
from devtools.box import Box
from devtools.cluster import Cluster
from devtools.hosts import Hosts
from poll.presenter_key import PRESENTER_KEY_ENV


def one_hall(students: int, minutes: float, arrival_s: float, seed: int, profile: Path | None = None,
             processes: int = 1, regime: str = "notch", poll_round: bool = False, steps: int = 0,
             box: bool = False, front_end: bool = False, server: AppServer | None = None,
             machines: int = 1, pin: str | None = None, trained: bool = True) -> dict:
    """One run: `students` on one `streamlit run` process, or on `processes` of them behind nginx
    (`devtools.cluster`), stepping as `regime` says (`REGIMES`). CPU is summed over the app processes; RSS is
    the largest process's peak. With `poll_round`, a lecturer in presenter mode has a round of the class poll open
    on the scaled-attention page's quiz for the whole run, its panel rerunning every second as the browser does
    (`benchmarks.poll_idle.Presenter`), and the students on that page see the round. Each student makes `steps`
    steps (0: until the time is up). With `box`, the one process runs in Cloud's box (`devtools.box`). With
    `front_end`, each first visit also fetches the front end's files, as Chromium fetched them from this server
    (`benchmarks.front_end`). With `machines` above 1, the `processes` are spread evenly over that many machines,
    each a network namespace of its own, behind one nginx, the poll on PostgreSQL in another (`devtools.hosts`, as
    root), outside any box and without a poll round (its store is not this process's to open). With `server`, the
    hall runs on that running process and leaves it running: one process, outside any box, its poll store the one it
    was started with, so without `poll_round` or `profile`. With `pin`, the one process runs under ``taskset -c pin``
    (the students do not). With `trained=False`, nothing is trained before the students arrive (`Hall.trained`)."""
    if server is not None and (processes != 1 or box or poll_round or profile is not None or pin is not None):
        raise ValueError("a hall on a running server has one process, no box, no poll round, no profile and no pin")
    if pin is not None and (processes != 1 or box or machines > 1):
        raise ValueError("a pinned hall has one process, outside Cloud's box, on one machine")
    if machines > 1 and (processes % machines or box or poll_round):
        raise ValueError(f"a hall on {machines} machines spreads its processes evenly over them, outside any box, "
                         "without a poll round")
    machine_speed_s = python_loop_s()  # measured before the server starts, with nothing of this run going on
    hall = Hall(students, minutes, arrival_s, steps, regime, None, front_end, trained)
    if server is not None:
        return _one_hall(contextlib.nullcontext(server), None, hall, seed, None, processes, machine_speed_s)
    if machines > 1:
        spread = on_machines(machines, processes, {PRESENTER_KEY_ENV: POLL_KEY})
        return _one_hall(spread, None, hall, seed, profile, processes, machine_speed_s)
    with tempfile.TemporaryDirectory() as poll_data:
        env = {"ATTENTION_POLL_DATA_DIR": poll_data, "ATTENTION_PRESENTER_KEY": POLL_KEY}
        with Box() if box else contextlib.nullcontext() as cloud:
            server = (AppServer(env=env, box=cloud, prefix=["taskset", "-c", pin] if pin is not None else ())
                      if processes == 1 else Cluster(processes, env=env))
            if poll_round:
                hall = dataclasses.replace(hall, poll_data=Path(poll_data))
            return _one_hall(server, cloud, hall, seed, profile, processes, machine_speed_s)


@contextlib.contextmanager
def on_machines(machines: int, processes: int, env: dict[str, str]) -> Iterator[Cluster]:
    """`processes` app processes spread over `machines` network namespaces (`devtools.hosts`): its nginx, which a
    hall reads as it reads a `Cluster` of its own."""
    with Hosts(machines=machines, processes=processes // machines, env=env) as hosts:
        assert hosts.cluster is not None
        yield hosts.cluster


@dataclass(frozen=True)
class Hall:
    """What one run's class does: `students` arriving within `arrival_s`, stepping as `regime` says for `minutes`
    or `steps` steps each; with `poll_data`, a lecturer keeps a poll round open (its store's directory); with
    `front_end`, first visits fetch the front end's files; with `trained`, the lecturer trains their pages first (as
    before class: the decoder's shows its sliders only once trained), which a test that times nothing may skip."""

    students: int
    minutes: float
    arrival_s: float
    steps: int
    regime: str
    poll_data: Path | None
    front_end: bool = False
    trained: bool = True


def students_pages(hashes: dict[str, str], students: int) -> list[str]:
    """The page (url path) each of `students` opens, in order of arrival: the router's pages in turn, sorted."""
    pages = sorted(hashes)
    return [pages[k % len(pages)] for k in range(students)]


def _one_hall(running: contextlib.AbstractContextManager[AppServer | Cluster], box: Box | None, hall_spec: Hall,
              seed: int, profile: Path | None, processes: int, machine_speed_s: float) -> dict:
    """`one_hall` on the server that entering `running` gives (and exiting it stops, or not)."""
    students, minutes, arrival_s = hall_spec.students, hall_spec.minutes, hall_spec.arrival_s
    regime, poll_data = hall_spec.regime, hall_spec.poll_data
    with running as server, contextlib.ExitStack() as sampling:
        pids = [server.proc.pid] if processes == 1 else server.app_pids
        sampler = None if profile is None else sampling.enter_context(Sampler(pids[0], profile))
        hashes = page_hashes(server.url)
        pages = students_pages(hashes, students)
        opened = {path: hashes[path] for path in pages}
        if hall_spec.trained:
            train_before_class(server.url, opened, tries=2 * processes)
        sliders = page_sliders(server.url, opened) if regime == "link" else {}
        files = recorded_files(server.url) if hall_spec.front_end else []
        rng = random.Random(seed)
        results = empty_results()

        def session(k: int, end_at: float) -> Coroutine[Any, Any, None]:
            page_hash = hashes[pages[k]]
            link = random_link(sliders[page_hash], rng) if regime == "link" else None
            return student_session(server.url, page_hash, seed * 1000 + k, rng.uniform(0, arrival_s), end_at,
                                   results, regime, link, hall_spec.steps, files)

        async def hall() -> bool:
            end_at = time.monotonic() + arrival_s + minutes * 60
            presenting = None if poll_data is None else await open_poll_round(server.url, hashes, poll_data, end_at,
                                                                              results)
            sessions = [session(k, end_at) for k in range(students)]
            await asyncio.gather(*sessions)
            if presenting is not None:
                await presenting
            return await cross_talk(server.url, hashes[""])

        cpu_before, clients_before = sum(cpu_s(pid) for pid in pids), time.process_time()
        throttled_before = box.throttled_s() if box else float("nan")
        started = time.monotonic()
        no_cross_talk = run_coroutine(hall())
        cpu_used = sum(cpu_s(pid) for pid in pids) - cpu_before
        clients_cpu, busy_s = time.process_time() - clients_before, results["last_step_at"] - started
        throttled = box.throttled_s() - throttled_before if box else float("nan")
        behind_nginx = isinstance(server, Cluster)
        statuses = server.statuses() if behind_nginx else Counter()
        upstream_errors = dict(server.upstream_errors()) if behind_nginx else {}
        rss_mb = max(peak_rss_mb(pid) for pid in pids)
        if sampler is not None:  # py-spy writes its files when the process it samples exits
            server.stop()
            sampler.wait(60)
        return {
            "regime": regime, "processes": processes, "app_pids": pids, "students": students,
            **_step_figures(results, students, busy_s, cpu_used, clients_cpu, throttled),
            "rss_mb": rss_mb,
            "exceptions": results["exceptions"], "failed_sessions": len(results["failed"]),
            "interrupted_runs": results["interrupted_runs"],
            "failures": results["failed"][:5], "exception_texts": sorted(set(results["exception_texts"]))[:10],
            "no_cross_talk": no_cross_talk,
            "nginx_5xx": sum(n for status, n in statuses.items() if status >= 500),
            "nginx_502": statuses[502], "taken_out": server.processes_taken_out() if behind_nginx else 0,
            "upstream_errors": upstream_errors,
            "round_state_asks": results["round_state_asks"], "round_state_changes": results["round_state_changes"],
            "poll_round_open": poll_data is not None, "presenter_ticks": results.get("presenter_ticks", 0),
            "python_loop_s": machine_speed_s,
        }


def _step_figures(results: dict, students: int, busy_s: float, cpu_used: float, clients_cpu: float,
                  throttled: float) -> dict:
    """The hall's steps, waits and first visits as percentiles, and the CPU the server and the clients took over the
    `busy_s` the steps lasted (`throttled`: the box's throttled seconds)."""
    steps = results["step_s"]
    return {
        "steps": len(steps),
        "step_p50_ms": percentile(steps, 0.5) * 1e3, "step_p95_ms": percentile(steps, 0.95) * 1e3,
        "step_max_ms": max(steps, default=float("nan")) * 1e3,
        "wait_p50_ms": percentile(results["wait_s"], 0.5) * 1e3,
        "wait_p95_ms": percentile(results["wait_s"], 0.95) * 1e3,
        "steps_per_s": len(steps) / max(busy_s, 1e-9),
        "server_cpu_share": cpu_used / max(busy_s, 1e-9), "clients_cpu_share": clients_cpu / max(busy_s, 1e-9),
        "box_throttled_s": throttled,
        "first_visit_p50_s": percentile(results["first_visit_s"], 0.5),
        "first_visit_p95_s": percentile(results["first_visit_s"], 0.95),
        "front_end_mb_per_visit": results["front_end_bytes"] / max(1, len(results["first_visit_s"])) / 1e6,
        "cpu_ms_per_step": cpu_used / max(1, len(steps) + students) * 1e3,
    }


async def open_poll_round(url: str, hashes: dict[str, str], data: Path, end_at: float, results: dict) -> asyncio.Task:
    """The lecturer unlocks the panel of the scaled-attention page's quiz, a round opens (in the store, as Open
    does), and the panel reruns on its interval until `end_at`: the task doing that."""
    from poll import open_store

    lecturer = Presenter(url, hashes[PAGE], POLL_KEY)
    await lecturer.open_page()
    await asyncio.to_thread(open_store(data_directory=data).open_round, QUIZ, QUESTION)

    async def present() -> None:
        await lecturer.tick_until(end_at)
        results["presenter_ticks"] = len(lecturer.counts)
        results["exceptions"] += lecturer.exceptions
        await lecturer.ws.close()

    return asyncio.create_task(present())


REGIMES = ("notch", "jump", "link", "storm")
def main() -> None:
    args = _parser().parse_args()
    if args.summarise:
        summarise(args.summarise, thread=args.thread)
        return
    storms = {}
    if "storm" in args.regimes:  # the train storm has figures of its own (`benchmarks.train_storm`)
        storms = main_storm(args.trainers, args.students, tuple(args.train_pages), args.repeats, args.pin,
                            args.deadline, args.train_steps, args.profile)
        args.out.write_text(json.dumps({"args": vars(args) | {"out": str(args.out)}, "storms": storms}, indent=2,
                                       default=str))
        args.regimes = [r for r in args.regimes if r != "storm"]
        if not args.regimes:
            return
    runs, solo = _halls(args)
    _report(args, runs, solo, storms)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=60)
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--arrival", type=float, default=5.0, help="students arrive within this many seconds")
    parser.add_argument("--steps", type=int, default=0,
                        help="each student makes this many steps, then leaves (0: steps until the time is up)")
    parser.add_argument("--box", action="store_true",
                        help="one process in Community Cloud's box: a cgroup of 1 core and 2.7 GB (root)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--regimes", nargs="+", choices=REGIMES, default=list(REGIMES),
                        help="how students step: notch (arrow keys), jump (anywhere on a slider), link (first "
                             "visit at a random link's values, then jumps); storm: --trainers press Train while "
                             "--students browse the other pages (benchmarks.train_storm)")
    parser.add_argument("--processes", type=int, nargs="+", default=[1],
                        help="layouts to compare, e.g. 1 2: one process, then two behind nginx (alternating)")
    parser.add_argument("--machines", type=int, default=1,
                        help="spread each layout's processes evenly over this many machines, each a network "
                             "namespace of its own, behind one nginx, the poll on PostgreSQL (devtools.hosts; root)")
    parser.add_argument("--solo-steps", type=int, default=8,
                        help="steps to new values per slider for one student alone (0: skip that measurement)")
    parser.add_argument("--trainers", type=int, default=20,
                        help="storm: students pressing Train, each at a setting of their own (--students browse)")
    parser.add_argument("--train-pages", nargs="+", choices=TRAIN_PAGES, default=["decoder"],
                        help="storm: the pages the trainers are spread over")
    parser.add_argument("--pin", help="run the server under taskset -c PIN (e.g. 0: one core): the storm's, and a hall's "
                                      "one process")
    parser.add_argument("--train-steps", type=int, help="storm: the trainers' training steps (default: the pages')")
    parser.add_argument("--deadline", type=float, default=DEADLINE_S,
                        help="storm: seconds after which the trainings still going are given up")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/load_results.json"))
    parser.add_argument("--profile", type=Path, help="sample the (first) app process with py-spy into this file "
                                                     "(first repeat of the first regime and layout)")
    parser.add_argument("--poll-round", action="store_true",
                        help="a lecturer keeps a class-poll round open on the scaled-attention page, its panel "
                             "rerunning every second, for the whole run")
    parser.add_argument("--front-end", action="store_true",
                        help="each first visit also fetches Streamlit's front end from the server (the files a "
                             "first visit in Chromium fetched), as a browser that has never opened the app does")
    parser.add_argument("--summarise", type=Path, help="print where a profile's samples went, then exit")
    parser.add_argument("--thread", default="", help="with --summarise: only this kind of thread, e.g. MainThread")
    return parser


def _halls(args: argparse.Namespace) -> tuple[dict[str, list[dict]], list[dict[str, dict[str, float]]]]:
    """Every regime and layout's halls, `args.repeats` times, alternating; and one student alone before each
    round of them."""
    columns = [(r, n) for r in args.regimes for n in args.processes]
    runs: dict[str, list[dict]] = {layout_name(r, n, args.machines): [] for r, n in columns}
    solo: list[dict[str, dict[str, float]]] = []
    for seed in range(args.repeats):  # regimes and layouts alternate, so a change in the machine's load hits all
        if args.solo_steps:
            solo.append(new_settings_cpu(args.solo_steps, seed))
        for k, (regime, n) in enumerate(columns):
            profile = args.profile if seed == 0 and k == 0 else None
            runs[layout_name(regime, n, args.machines)].append(
                one_hall(args.students, args.minutes, args.arrival, seed, profile, processes=n, regime=regime,
                         poll_round=args.poll_round, steps=args.steps, box=args.box,
                         front_end=args.front_end, machines=args.machines,
                         pin=args.pin if n == 1 and not args.box and args.machines == 1 else None))
    return runs, solo


def _report(args: argparse.Namespace, runs: dict[str, list[dict]], solo: list[dict[str, dict[str, float]]],
            storms: dict) -> None:
    """Print the medians of every layout's halls and of one student alone, and write every run to `args.out`."""
    summaries = {name: summary_of(r) for name, r in runs.items()}
    print(f"{args.students} students, {args.minutes:g} min, arriving within {args.arrival:g} s, "
          f"{args.repeats} repeat(s), medians; Python {platform.python_version()}, {os.cpu_count()} CPUs")
    print(table(summaries))
    solo_median = {}
    if solo:
        solo_median = {name: {k: statistics.median(run[name][k] for run in solo if name in run) for k in ("cpu_ms",
                                                                                                        "wall_ms")}
                       for name in solo[0]}
        print(f"One student alone, {args.solo_steps} steps per slider to settings never computed, medians:")
        print(solo_table(solo_median))
    args.out.write_text(json.dumps({"args": vars(args) | {"out": str(args.out)},
                                    "layouts": {name: {"runs": runs[name], "median": summaries[name]} for name in runs},
                                    "new_settings": {"runs": solo, "median": solo_median}, "storms": storms},
                                   indent=2, default=str))


if __name__ == "__main__":
    main()
