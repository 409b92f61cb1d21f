"""What the class poll's live fragment costs the server while no round is open, and how fast a round reaches
the students' screens: N students on one page.

    python -m benchmarks.poll_idle [--students 60 300] [--seconds 30] [--repeats 3] [--processes 2]
                                   [--out benchmarks/poll_idle_results.json]

Each student is a websocket client (`benchmarks.load.Student`) on the scaled-attention page. It opens the page,
then does what the browser does for a fragment with ``run_every``: when the server announced it
(``auto_rerun``, the poll's `ui.class_poll.student_round`), it asks for a rerun of that fragment alone every
interval. Students start spread over one interval, as browsers would. The app's CPU over `seconds` of this is
compared with the same students connected and not ticking (what the page cost before the poll). Then, still
ticking, a round opens on the page's quiz (written to the store directly, as the lecturer's Open does), and
`REVEAL_AFTER_S` later it is revealed: each student notes when the round, then the revealed answer, first
reached its screen. Reported per count: CPU % of one core with ticks and without, CPU per tick, ticks answered,
exceptions, and the open's and the reveal's p50 and p95 over every student (one never reached counts as
infinitely slow). `--processes` app processes (two, behind nginx, by default; CPU summed over them) with their
poll in a temporary data directory. Nothing asserts on time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
import statistics
import tempfile
import time
from pathlib import Path

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from benchmarks.load import ANSWER_TIMEOUT_S, Student, cpu_s, page_hashes, run_coroutine
from benchmarks.timing import python_loop_s
from devtools.appserver import AppServer
from devtools.cluster import Cluster
from poll import Question, open_store

PAGE, QUIZ = "scaled_attention", "scaling_16x"
#: Seconds between opening the round and revealing it, and from the reveal to the end.
REVEAL_AFTER_S = 10.0


#: What a student's screen shows once a round is open, and once it is revealed (`ui.class_poll._student_view`).
OPENED, REVEALED = b"Class poll, round", b"The computed answer is"
#: The benchmark's round: on the page's quiz, at the page's defaults.
QUESTION = Question(quiz=QUIZ, text="Benchmark: which option?", options=("one", "two"), answer="one",
                    explanation="The benchmark's answer.")


class TickingStudent(Student):
    """A student who also reruns the fragments the server asked to be rerun on a timer (``auto_rerun``), and
    notes when each of `watched`'s texts first reached the screen."""

    def __init__(self, url: str, page_hash: str, seed: int) -> None:
        super().__init__(url, page_hash, random.Random(seed))
        self.timers: dict[str, float] = {}  # fragment id -> interval (s)
        self.ticks = 0
        self.late_ticks = 0
        self.exceptions = 0
        self.first_seen: dict[bytes, float] = {}  # text -> time.monotonic() of the first message holding it

    async def open_page(self) -> None:
        await self.connect()
        raw_recv = self.ws.recv

        async def recv(*args, **kwargs):  # note the auto-rerun announcements the run sends, and the texts seen
            raw = await raw_recv(*args, **kwargs)
            for text in (OPENED, REVEALED):
                if text not in self.first_seen and text in raw:
                    self.first_seen[text] = time.monotonic()
            fm = ForwardMsg.FromString(raw)
            if fm.WhichOneof("type") == "auto_rerun":
                self.timers[fm.auto_rerun.fragment_id] = fm.auto_rerun.interval
            return raw

        self.ws.recv = recv
        _, seen = await self.rerun()
        self.exceptions += seen.exceptions

    async def tick_until(self, end_at: float, offset_s: float) -> None:
        """Rerun every announced fragment on its interval until `end_at`, on a fixed schedule as a browser's
        timer does: a tick whose time came while the last one was still running goes at once (a late tick)."""
        if not self.timers:
            return
        (fragment_id, interval), = self.timers.items()
        due = time.monotonic() + offset_s
        while due + interval < end_at:
            due += interval
            now = time.monotonic()
            if now < due:
                await asyncio.sleep(due - now)
            else:
                self.late_ticks += 1
                due = now
            msg = BackMsg()
            msg.rerun_script.page_script_hash = self.page_hash
            msg.rerun_script.fragment_id = fragment_id
            await self.ws.send(msg.SerializeToString())
            while True:  # the fragment's run: read to its end
                fm = ForwardMsg.FromString(await asyncio.wait_for(self.ws.recv(), ANSWER_TIMEOUT_S))
                if fm.WhichOneof("type") == "delta" and fm.delta.WhichOneof("type") == "new_element" \
                        and fm.delta.new_element.WhichOneof("type") == "exception":
                    self.exceptions += 1
                if fm.WhichOneof("type") == "script_finished":
                    break
            self.ticks += 1


def reach(class_: list[TickingStudent], text: bytes, since: float) -> dict:
    """How long `text` took to reach the students' screens after `since`: p50, p95, and how many it reached."""
    waits = sorted(s.first_seen[text] - since for s in class_ if text in s.first_seen)

    def quantile(q: float) -> float:  # over every student: one never reached counts as the slowest
        return waits[int(q * len(class_))] if int(q * len(class_)) < len(waits) else float("inf")

    return {"p50_s": quantile(0.50), "p95_s": quantile(0.95), "reached": len(waits), "of": len(class_)}


def one_count(url: str, pids: list[int], page_hash: str, students: int, seconds: float, data: Path,
              reveal_after_s: float = REVEAL_AFTER_S) -> dict:
    """`students` idle on the page for `seconds` not ticking, then for `seconds` ticking (the app's CPU in each);
    then, still ticking, a round opens, and after `reveal_after_s` it is revealed: how long each took to reach
    the students' screens."""
    store = open_store(data_directory=data)

    def cpu() -> float:
        return sum(cpu_s(pid) for pid in pids)

    async def hall() -> dict:
        class_ = [TickingStudent(url, page_hash, k) for k in range(students)]
        for k in range(0, students, 20):  # open in batches, as a class arrives
            await asyncio.gather(*(s.open_page() for s in class_[k:k + 20]))
        interval = max((next(iter(s.timers.values()), 0.0) for s in class_), default=0.0)
        await asyncio.sleep(3.0)  # the opening runs' aftermath (the warm-up imports) is over
        before = cpu()
        await asyncio.sleep(seconds)
        idle_cpu = cpu() - before
        end_at = time.monotonic() + seconds + 2 * reveal_after_s
        offsets = [interval * k / students for k in range(students)]
        ticking = asyncio.gather(*(s.tick_until(end_at, o) for s, o in zip(class_, offsets, strict=True)))
        before = cpu()
        await asyncio.sleep(seconds)
        ticking_cpu = cpu() - before
        ticks = sum(s.ticks for s in class_)
        opened_at = time.monotonic()
        opened = await asyncio.to_thread(store.open_round, QUIZ, QUESTION)
        await asyncio.sleep(reveal_after_s)
        revealed_at = time.monotonic()
        await asyncio.to_thread(store.reveal, opened.id)
        await ticking
        for s in class_:
            await s.ws.close()
        return {"students": students, "processes": len(pids), "interval_s": interval,
                "cpu_pct_no_ticks": 100 * idle_cpu / seconds, "cpu_pct_ticking": 100 * ticking_cpu / seconds,
                "cpu_ms_per_tick": 1000 * (ticking_cpu - idle_cpu) / ticks if ticks else float("nan"),
                "ticks": ticks, "ticks_expected": int(students * seconds / interval) if interval else 0,
                "late_ticks": sum(s.late_ticks for s in class_),
                "open": reach(class_, OPENED, opened_at), "reveal": reach(class_, REVEALED, revealed_at),
                "exceptions": sum(s.exceptions for s in class_)}

    return run_coroutine(hall())


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.poll_idle", description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, nargs="+", default=[60, 300])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--processes", type=int, default=2, help="app processes (2 or more: behind nginx)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/poll_idle_results.json"))
    args = parser.parse_args()
    runs = []
    machine_speed_s = python_loop_s()
    for repeat in range(args.repeats):
        for students in args.students:
            with tempfile.TemporaryDirectory() as data:
                env = {"ATTENTION_POLL_DATA_DIR": data}
                with AppServer(env=env) if args.processes == 1 else Cluster(args.processes, env=env) as server:
                    pids = [server.proc.pid] if args.processes == 1 else server.app_pids
                    page_hash = page_hashes(server.url)[PAGE]
                    result = one_count(server.url, pids, page_hash, students, args.seconds, Path(data))
            runs.append({"repeat": repeat, **result})
            print(json.dumps(runs[-1]), flush=True)
    figures = {"cpu_pct_no_ticks": ("cpu_pct_no_ticks",), "cpu_pct_ticking": ("cpu_pct_ticking",),
               "cpu_ms_per_tick": ("cpu_ms_per_tick",), "ticks": ("ticks",), "exceptions": ("exceptions",),
               "open_p95_s": ("open", "p95_s"), "reveal_p95_s": ("reveal", "p95_s"),
               "open_reached": ("open", "reached"), "reveal_reached": ("reveal", "reached")}

    def figure(run: dict, path: tuple[str, ...]) -> float:
        for key in path:
            run = run[key]
        return run

    medians = {n: {name: statistics.median(figure(r, path) for r in runs if r["students"] == n)
                   for name, path in figures.items()} for n in args.students}
    report = {"machine": platform.node(), "machine_speed_s": machine_speed_s, "seconds": args.seconds,
              "processes": args.processes, "runs": runs, "medians": medians}
    args.out.write_text(json.dumps(report, indent=2))
    for n, m in medians.items():
        print(f"{n:4d} students: CPU {m['cpu_pct_no_ticks']:.1f} % of a core connected, "
              f"{m['cpu_pct_ticking']:.1f} % ticking ({m['ticks']:.0f} ticks, {m['cpu_ms_per_tick']:.2f} ms each, "
              f"{m['exceptions']:.0f} exceptions); open reached {m['open_reached']:.0f} screens, p95 "
              f"{m['open_p95_s']:.2f} s; reveal {m['reveal_reached']:.0f}, p95 {m['reveal_p95_s']:.2f} s")


if __name__ == "__main__":
    main()
