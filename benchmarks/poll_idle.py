"""What the class poll costs the server while no round is open, and how fast a round and the votes travel: N
students and a lecturer on one page.

    python -m benchmarks.poll_idle [--students 60 300] [--seconds 30] [--repeats 3] [--processes 2]
                                   [--out benchmarks/poll_idle_results.json]

Each student is a websocket client (`benchmarks.protocol.Student`) on the scaled-attention page. It opens the page,
then does what its browser does for the poll's watcher (`ui.poll_watch`): every interval it asks the watcher's
HTTP route for the quiz's round state (one keep-alive connection per student, with its nginx route cookie), and
when the state differs from the one the page was drawn at, it reruns the poll's fragment with the watcher's
trigger, as the component's ``setTriggerValue`` does. Students start spread over one interval, as browsers
would. The app's CPU over `seconds` of this is compared with the same students connected and not asking (what
the page cost before the poll).

Then, still asking, the lecturer's browser (`benchmarks.lecturer.Presenter`: presenter mode, unlocked with the key)
watches its panel, ticking as the server asks, while a round opens on the page's quiz (written to the store
directly, as the lecturer's Open does). Each student votes at a seeded moment within `VOTE_SPREAD_S` of the opening,
once the round reached its screen, and `CHANGERS` of them once more, differently; `VOTE_SPREAD_S` + 5 s after the
opening the round is revealed. A student stops asking once the reveal is on its screen, and the lecturer after one
more tick once it is on every screen (or 10 s after the reveal, whichever comes first).

Reported per count: CPU % of one core with the students asking and without, CPU per ask, asks, fragment runs
(while idle, and in all), exceptions; the opening's and the reveal's p50 and p95 to every student's screen; a
vote's p50 and p95 to "Answer recorded" on its screen and to the presenter's count (one never reached counts as
infinitely slow); and whether the presenter's last count, the store's counts and the students' own record of
their last recorded answers agree. `--processes` app processes (two, behind nginx, by default; CPU summed over
them) with their poll in a temporary data directory. Nothing asserts on time.
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
from dataclasses import dataclass
from pathlib import Path

from streamlit.components.v2.bidi_component.main import _make_trigger_id
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

from benchmarks.lecturer import PAGE, POLL_KEY, QUESTION, QUIZ, Presenter
from benchmarks.protocol import ANSWER_TIMEOUT_S, HttpConnection, Student, cpu_s, page_hashes, run_coroutine
from benchmarks.timing import python_loop_s
from devtools.appserver import AppServer
from devtools.cluster import Cluster
from poll import Counts, open_store
from ui.poll_watch import WATCH_KEY_PREFIX

#: The students vote within this many seconds of the round's opening; the reveal comes 5 s after.
VOTE_SPREAD_S = 20.0
#: The share of students who change their vote once.
CHANGERS = 0.3
#: The presenter key the benchmark's servers are given.
KEY = POLL_KEY
#: What a student's screen shows once a vote was recorded (`ui.class_poll._send`).
RECORDED = b"Answer recorded"
#: What a student's screen shows once a round is open, and once it is revealed (`ui.class_poll._student_view`:
#: the round's explanation, under whichever verdict).
OPENED, REVEALED = b"Class poll, round", QUESTION.explanation.encode()


class WatchingStudent(Student):
    """A student whose page holds the poll's watcher: it asks the watcher's route on the watcher's interval, reruns
    the poll's fragment when the state moved, and notes when each of `OPENED` and `REVEALED` first reached the
    screen."""

    def __init__(self, url: str, page_hash: str, seed: int) -> None:
        super().__init__(url, page_hash, random.Random(seed))
        self.watcher: dict | None = None  # the watcher's data, widget id and fragment, as last drawn
        self.asks = 0
        self.late_asks = 0
        self.fragment_runs = 0
        self.exceptions = 0
        self.first_seen: dict[bytes, float] = {}  # text -> time.monotonic() of the first message holding it
        self.http: HttpConnection | None = None
        self.vote_widgets: dict[str, str] = {}  # "radio", "send" -> widget id, as the open round drew them
        self.choice: str | None = None  # the option picked (the radio's state, sent with every later run)
        self.votes: list[Vote] = []
        self.turn = asyncio.Lock()  # one run at a time on the websocket (the watcher's or a vote)

    async def open_page(self) -> None:
        await self.connect()
        self.http = HttpConnection(self.http_url, self.cookies)
        raw_recv = self.ws.recv

        async def recv(*args, **kwargs):  # note the watcher as drawn, and the texts seen
            raw = await raw_recv(*args, **kwargs)
            for text in (OPENED, REVEALED):
                if text not in self.first_seen and text in raw:
                    self.first_seen[text] = time.monotonic()
            fm = ForwardMsg.FromString(raw)
            if fm.WhichOneof("type") == "delta" and fm.delta.WhichOneof("type") == "new_element":
                element = fm.delta.new_element
                which = element.WhichOneof("type")
                if which == "bidi_component" and WATCH_KEY_PREFIX in element.bidi_component.id:
                    self.watcher = {**json.loads(element.bidi_component.json), "id": element.bidi_component.id,
                                    "fragment_id": fm.delta.fragment_id}
                elif which == "radio" and f"poll_{QUIZ}_choice_" in element.radio.id:
                    self.vote_widgets["radio"] = element.radio.id
                elif which == "button" and element.button.id.endswith(f"poll_{QUIZ}_send"):
                    self.vote_widgets["send"] = element.button.id
            return raw

        self.ws.recv = recv
        _, seen = await self.rerun()
        self.exceptions += seen.exceptions

    async def watch_until(self, end_at: float, offset_s: float) -> None:
        """Ask the route every interval until `end_at`, on a fixed schedule as a browser's timer does (an ask whose
        time came while the last one was still running goes at once: a late ask); rerun the fragment on a change.
        A student whose screen shows the reveal has seen the round through, and stops."""
        if self.watcher is None:
            return
        interval = self.watcher["every_ms"] / 1000
        due = time.monotonic() + offset_s
        while due + interval < end_at and REVEALED not in self.first_seen:
            due += interval
            now = time.monotonic()
            if now < due:
                await asyncio.sleep(due - now)
            else:
                self.late_asks += 1
                due = now
            status, state = await asyncio.wait_for(self.http.get("/" + self.watcher["url"]), ANSWER_TIMEOUT_S)
            self.asks += 1
            if status != 200 or state != self.watcher["state"]:
                widget = WidgetState(id=_make_trigger_id(self.watcher["id"], "events"),
                                     json_trigger_value=json.dumps([{"event": "changed", "value": state}]))
                await self.poll_run([widget])

    async def poll_run(self, states: list[WidgetState]) -> bytes:
        """A run of the poll's fragment with `states` (and the radio's pick, once made), read to its end: all it
        sent, as bytes (the watcher's trigger, as ``setTriggerValue`` sends it, or a vote)."""
        async with self.turn:
            msg = BackMsg()
            msg.rerun_script.page_script_hash = self.page_hash
            msg.rerun_script.fragment_id = self.watcher["fragment_id"]
            if self.choice is not None and "radio" in self.vote_widgets:
                states = [WidgetState(id=self.vote_widgets["radio"], string_value=self.choice), *states]
            msg.rerun_script.widget_states.widgets.extend(states)
            await self.ws.send(msg.SerializeToString())
            received = []
            while True:
                raw = await asyncio.wait_for(self.ws.recv(), ANSWER_TIMEOUT_S)
                received.append(raw)
                fm = ForwardMsg.FromString(raw)
                if fm.WhichOneof("type") == "delta" and fm.delta.WhichOneof("type") == "new_element" \
                        and fm.delta.new_element.WhichOneof("type") == "exception":
                    self.exceptions += 1
                if fm.WhichOneof("type") == "script_finished":
                    break
            self.fragment_runs += 1
            return b"".join(received)

    async def vote(self, option: str) -> None:
        """Pick `option` and press "Send my answer"; note when "Answer recorded" reached the screen."""
        if "send" not in self.vote_widgets:  # the round has not reached this screen yet
            self.votes.append(Vote(option, time.monotonic(), None))
            return
        self.choice = option
        sent_at = time.monotonic()
        shown = await self.poll_run([WidgetState(id=self.vote_widgets["send"], trigger_value=True)])
        recorded = RECORDED in shown and option.encode() in shown
        self.votes.append(Vote(option, sent_at, time.monotonic() if recorded else None))


@dataclass(frozen=True)
class Vote:
    """One press of "Send my answer": the option, when it was sent, when "Answer recorded" came back (or None)."""

    option: str
    sent_at: float
    recorded_at: float | None


def to_presenter(class_: list[WatchingStudent], counts: list[tuple[float, int]]) -> list[float]:
    """For each student's first recorded vote, in the order they were recorded, the k-th: from its send to the first
    count of at least k on the presenter's screen after it (a changed vote leaves the count as it was)."""
    firsts = sorted((next(v for v in s.votes if v.recorded_at is not None) for s in class_
                     if any(v.recorded_at is not None for v in s.votes)), key=lambda v: v.recorded_at)
    waits = []
    for k, vote in enumerate(firsts, start=1):
        shown = next((t for t, n in counts if n >= k and t >= vote.sent_at), None)
        waits.append(float("inf") if shown is None else shown - vote.sent_at)
    return waits


def quantiles(waits: list[float], of: int) -> dict:
    """p50 and p95 of `waits` over `of` events (one missing, or infinite, counts as the slowest)."""
    waits = sorted(waits)

    def quantile(q: float) -> float:
        return waits[int(q * of)] if int(q * of) < len(waits) else float("inf")

    return {"p50_s": quantile(0.50), "p95_s": quantile(0.95), "reached": sum(w < float("inf") for w in waits),
            "of": of}


def reach(class_: list[WatchingStudent], text: bytes, since: float) -> dict:
    """How long `text` took to reach the students' screens after `since`: p50, p95, and how many it reached."""
    return quantiles([s.first_seen[text] - since for s in class_ if text in s.first_seen], len(class_))


async def votes_of(student: WatchingStudent, opened_at: float, rng: random.Random, vote_spread_s: float,
                   changers: float) -> None:
    """`student` votes at a moment drawn within `vote_spread_s` of `opened_at`, once the round is on their screen;
    a `changers` share of students votes a second time, for another option."""
    options = list(QUESTION.options)
    times = sorted(opened_at + rng.uniform(0, vote_spread_s) for _ in range(2 if rng.random() < changers else 1))
    for at, option in zip(times, rng.sample(options, len(times)), strict=True):
        await asyncio.sleep(max(0.0, at - time.monotonic()))
        while "send" not in student.vote_widgets and time.monotonic() < opened_at + vote_spread_s + 10:
            await asyncio.sleep(0.1)  # a student votes once the round is on the screen
        await student.vote(option)


def vote_figures(class_: list[WatchingStudent], lecturer: Presenter, counts: Counts) -> dict:
    """How long a vote took to its screen and to the presenter's count, and whether the presenter's last count,
    the store's `counts` and the students' own record of their last recorded votes agree."""
    votes = [v for s in class_ for v in s.votes]
    last = [next((v.option for v in reversed(s.votes) if v.recorded_at is not None), None) for s in class_]
    own_record = {o: sum(choice == o for choice in last) for o in counts.options}
    return {"votes": len(votes), "votes_not_recorded": sum(v.recorded_at is None for v in votes),
            "vote_to_screen": quantiles([v.recorded_at - v.sent_at for v in votes if v.recorded_at], len(votes)),
            "vote_to_presenter": quantiles(to_presenter(class_, lecturer.counts),
                                           sum(choice is not None for choice in last)),
            "presenter_total": lecturer.counts[-1][1] if lecturer.counts else None,
            "store_total": counts.total, "students_own_total": sum(c is not None for c in last),
            "store_matches_students": dict(zip(counts.options, counts.votes, strict=True)) == own_record,
            "totals_agree": (lecturer.counts[-1][1] if lecturer.counts else None) == counts.total
            == sum(c is not None for c in last) and dict(zip(counts.options, counts.votes, strict=True))
            == own_record}


def one_count(url: str, pids: list[int], page_hash: str, students: int, seconds: float, data: Path, key: str,
              vote_spread_s: float = VOTE_SPREAD_S, changers: float = CHANGERS) -> dict:
    """`students` idle on the page for `seconds` not asking, then for `seconds` asking the watcher's route (the
    app's CPU in each; a "tick" is one ask). Then, still asking, the lecturer (a `Presenter`, unlocked with `key`)
    watches the panel while a round opens; each student votes at a seeded moment within `vote_spread_s` of the
    opening (once the round reached its screen), a `changers` share of them once more, differently; then the
    round is revealed. Timed: the opening and the reveal to every screen, a vote to "Answer recorded" on its
    screen and to the presenter's count; checked: the presenter's last count, the store's and the students'
    own record agree."""
    store = open_store(data_directory=data)
    rng = random.Random(students)

    def cpu() -> float:
        return sum(cpu_s(pid) for pid in pids)

    async def hall() -> dict:
        class_ = [WatchingStudent(url, page_hash, k) for k in range(students)]
        for k in range(0, students, 20):  # open in batches, as a class arrives
            await asyncio.gather(*(s.open_page() for s in class_[k:k + 20]))
        interval = max((s.watcher["every_ms"] / 1000 for s in class_ if s.watcher), default=0.0)
        await asyncio.sleep(3.0)  # the opening runs' aftermath (the warm-up imports) is over
        before = cpu()
        await asyncio.sleep(seconds)
        idle_cpu = cpu() - before
        reveal_after_s = vote_spread_s + 5.0
        end_at = time.monotonic() + seconds + reveal_after_s + 10.0
        offsets = [interval * k / students for k in range(students)]
        watching = asyncio.gather(*(s.watch_until(end_at, o) for s, o in zip(class_, offsets, strict=True)))
        before = cpu()
        await asyncio.sleep(seconds)
        watching_cpu = cpu() - before
        asks, runs_idle = sum(s.asks for s in class_), sum(s.fragment_runs for s in class_)
        lecturer = Presenter(url, page_hash, key)
        await lecturer.open_page()
        presenting = asyncio.create_task(  # its last tick comes after every vote and the reveal reached every screen
            lecturer.tick_until(end_at, lambda: all(REVEALED in s.first_seen for s in class_)))
        opened_at = time.monotonic()
        opened = await asyncio.to_thread(store.open_round, QUIZ, QUESTION)
        await asyncio.gather(*(votes_of(s, opened_at, rng, vote_spread_s, changers) for s in class_))
        await asyncio.sleep(max(0.0, opened_at + reveal_after_s - time.monotonic()))
        revealed_at = time.monotonic()
        await asyncio.to_thread(store.reveal, opened.id)
        await watching
        await presenting
        for s in [*class_, lecturer]:
            await s.ws.close()
        for s in class_:
            s.http.close()
        return {"students": students, "processes": len(pids), "interval_s": interval,
                "cpu_pct_no_ticks": 100 * idle_cpu / seconds, "cpu_pct_ticking": 100 * watching_cpu / seconds,
                "cpu_ms_per_tick": 1000 * (watching_cpu - idle_cpu) / asks if asks else float("nan"),
                "ticks": asks, "ticks_expected": int(students * seconds / interval) if interval else 0,
                "late_ticks": sum(s.late_asks for s in class_), "fragment_runs_idle": runs_idle,
                "fragment_runs": sum(s.fragment_runs for s in class_),
                "open": reach(class_, OPENED, opened_at), "reveal": reach(class_, REVEALED, revealed_at),
                **vote_figures(class_, lecturer, store.counts(opened.id)),
                "exceptions": sum(s.exceptions for s in class_) + lecturer.exceptions}

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
                env = {"ATTENTION_POLL_DATA_DIR": data, "ATTENTION_PRESENTER_KEY": KEY}
                with AppServer(env=env) if args.processes == 1 else Cluster(args.processes, env=env) as server:
                    pids = [server.proc.pid] if args.processes == 1 else server.app_pids
                    page_hash = page_hashes(server.url)[PAGE]
                    result = one_count(server.url, pids, page_hash, students, args.seconds, Path(data), KEY)
            runs.append({"repeat": repeat, **result})
            print(json.dumps(runs[-1]), flush=True)
    figures = {"cpu_pct_no_ticks": ("cpu_pct_no_ticks",), "cpu_pct_ticking": ("cpu_pct_ticking",),
               "cpu_ms_per_tick": ("cpu_ms_per_tick",), "ticks": ("ticks",), "exceptions": ("exceptions",),
               "fragment_runs_idle": ("fragment_runs_idle",), "fragment_runs": ("fragment_runs",),
               "open_p95_s": ("open", "p95_s"), "reveal_p95_s": ("reveal", "p95_s"),
               "open_reached": ("open", "reached"), "reveal_reached": ("reveal", "reached"),
               "votes": ("votes",), "votes_not_recorded": ("votes_not_recorded",),
               "vote_to_screen_p50_s": ("vote_to_screen", "p50_s"), "vote_to_screen_p95_s": ("vote_to_screen", "p95_s"),
               "vote_to_presenter_p50_s": ("vote_to_presenter", "p50_s"),
               "vote_to_presenter_p95_s": ("vote_to_presenter", "p95_s"),
               "totals_agree": ("totals_agree",)}

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
              f"{m['cpu_pct_ticking']:.1f} % asking ({m['ticks']:.0f} asks, {m['cpu_ms_per_tick']:.2f} ms each, "
              f"{m['fragment_runs_idle']:.0f} fragment runs idle, {m['fragment_runs']:.0f} in all, "
              f"{m['exceptions']:.0f} exceptions); open reached {m['open_reached']:.0f} screens, p95 "
              f"{m['open_p95_s']:.2f} s; reveal {m['reveal_reached']:.0f}, p95 {m['reveal_p95_s']:.2f} s; "
              f"{m['votes']:.0f} votes ({m['votes_not_recorded']:.0f} not recorded): to the screen p50/p95 "
              f"{m['vote_to_screen_p50_s']:.2f}/{m['vote_to_screen_p95_s']:.2f} s, to the presenter "
              f"{m['vote_to_presenter_p50_s']:.2f}/{m['vote_to_presenter_p95_s']:.2f} s; totals agree in "
              f"{sum(r['totals_agree'] for r in runs if r['students'] == n)} of "
              f"{sum(r['students'] == n for r in runs)} runs")


if __name__ == "__main__":
    main()
