"""What the class poll's live fragment costs the server while no round is open: N idle students on one page.

    python -m benchmarks.poll_idle [--students 60 300] [--seconds 30] [--repeats 3]
                                   [--out benchmarks/poll_idle_results.json]

Each student is a websocket client (`benchmarks.load.Student`) on the scaled-attention page. It opens the page,
then does what the browser does for a fragment with ``run_every``: when the server announced it
(``auto_rerun``, the poll's `ui.class_poll.student_round`), it asks for a rerun of that fragment alone every
interval. Students start spread over one interval, as browsers would. The app's CPU over `seconds` of this is
compared with the same students connected and not ticking (what the page cost before the poll). Reported per
count: CPU % of one core with ticks and without, ticks answered, exceptions. One `streamlit run` process with
its poll in a temporary data directory. Nothing asserts on time.
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

PAGE = "scaled_attention"


class TickingStudent(Student):
    """A student who also reruns the fragments the server asked to be rerun on a timer (``auto_rerun``)."""

    def __init__(self, url: str, page_hash: str, seed: int) -> None:
        super().__init__(url, page_hash, random.Random(seed))
        self.timers: dict[str, float] = {}  # fragment id -> interval (s)
        self.ticks = 0
        self.exceptions = 0

    async def open_page(self) -> None:
        await self.connect()
        raw_recv = self.ws.recv

        async def recv(*args, **kwargs):  # note the auto-rerun announcements the run sends
            raw = await raw_recv(*args, **kwargs)
            fm = ForwardMsg.FromString(raw)
            if fm.WhichOneof("type") == "auto_rerun":
                self.timers[fm.auto_rerun.fragment_id] = fm.auto_rerun.interval
            return raw

        self.ws.recv = recv
        _, seen = await self.rerun()
        self.exceptions += seen.exceptions

    async def tick_until(self, end_at: float, offset_s: float) -> None:
        """Rerun every announced fragment on its interval until `end_at`."""
        if not self.timers:
            return
        (fragment_id, interval), = self.timers.items()
        await asyncio.sleep(offset_s)
        while time.monotonic() + interval < end_at:
            await asyncio.sleep(interval)
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


def one_count(url: str, pid: int, page_hash: str, students: int, seconds: float) -> dict:
    """`students` idle on the page for `seconds` not ticking, then for `seconds` ticking: the app's CPU in each."""

    async def hall() -> dict:
        class_ = [TickingStudent(url, page_hash, k) for k in range(students)]
        for k in range(0, students, 20):  # open in batches, as a class arrives
            await asyncio.gather(*(s.open_page() for s in class_[k:k + 20]))
        interval = max((next(iter(s.timers.values()), 0.0) for s in class_), default=0.0)
        await asyncio.sleep(3.0)  # the opening runs' aftermath (the warm-up imports) is over
        before = cpu_s(pid)
        await asyncio.sleep(seconds)
        idle_cpu = cpu_s(pid) - before
        before = cpu_s(pid)
        end_at = time.monotonic() + seconds
        offsets = [interval * k / students for k in range(students)]
        await asyncio.gather(*(s.tick_until(end_at, o) for s, o in zip(class_, offsets, strict=True)))
        ticking_s = seconds
        ticking_cpu = cpu_s(pid) - before
        for s in class_:
            await s.ws.close()
        return {"students": students, "interval_s": interval,
                "cpu_pct_no_ticks": 100 * idle_cpu / seconds, "cpu_pct_ticking": 100 * ticking_cpu / ticking_s,
                "ticks": sum(s.ticks for s in class_), "ticks_expected": int(students * seconds / interval)
                if interval else 0, "exceptions": sum(s.exceptions for s in class_)}

    return run_coroutine(hall())


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.poll_idle", description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, nargs="+", default=[60, 300])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/poll_idle_results.json"))
    args = parser.parse_args()
    runs = []
    machine_speed_s = python_loop_s()
    for repeat in range(args.repeats):
        for students in args.students:
            with tempfile.TemporaryDirectory() as data, \
                    AppServer(env={"ATTENTION_POLL_DATA_DIR": data}) as server:
                page_hash = page_hashes(server.url)[PAGE]
                result = one_count(server.url, server.proc.pid, page_hash, students, args.seconds)
            runs.append({"repeat": repeat, **result})
            print(json.dumps(runs[-1]), flush=True)
    medians = {n: {key: statistics.median(r[key] for r in runs if r["students"] == n)
                   for key in ("cpu_pct_no_ticks", "cpu_pct_ticking", "ticks", "exceptions")}
               for n in args.students}
    report = {"machine": platform.node(), "machine_speed_s": machine_speed_s, "seconds": args.seconds,
              "runs": runs, "medians": medians}
    args.out.write_text(json.dumps(report, indent=2))
    for n, m in medians.items():
        print(f"{n:4d} students: CPU {m['cpu_pct_no_ticks']:.1f} % of a core connected, "
              f"{m['cpu_pct_ticking']:.1f} % ticking ({m['ticks']:.0f} ticks, {m['exceptions']:.0f} exceptions)")


if __name__ == "__main__":
    main()
