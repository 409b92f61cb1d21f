"""What one simulated student of a hall does (`student_session`), and what the hall records of it (`empty_results`,
`record`): a first visit, slider steps, the class poll's route asked as the browser asks it; and the two students
that check for cross-talk. `benchmarks.load` runs a hall of them; `benchmarks.memory` a class."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Sequence

import websockets

from benchmarks.protocol import ANSWER_TIMEOUT_S, HttpConnection, RunSeen, Slider, Student, grid, option_text


async def student_session(url: str, page_hash: str, seed: int, arrive_s: float, end_at: float,
                          results: dict, regime: str = "notch", link: dict[str, str] | None = None,
                          steps: int = 0, front_end: Sequence[str] = ()) -> None:
    """One student: arrive, open the page (at `link`'s values, if given; fetching the front end's files
    `front_end` first, as a browser's first visit does), then step sliders until `end_at`, or until `steps` steps
    are made (0: no such limit)."""
    rng = random.Random(seed)
    await asyncio.sleep(arrive_s)
    student = Student(url, page_hash, rng)
    student.query = dict(link or {})
    asking = None
    try:
        arrived = time.perf_counter()
        await student.connect(front_end)
        results["front_end_bytes"] += student.front_end_bytes
        _, seen = await student.rerun()
        results["first_visit_s"].append(time.perf_counter() - arrived)
        record(results, seen, page_hash)
        student.absorb(seen)
        if seen.watcher is not None:
            asking = asyncio.create_task(ask_round_state(student, seen.watcher, end_at, results))
        made = 0
        while student.sliders and time.monotonic() < end_at and (not steps or made < steps):
            await asyncio.sleep(rng.uniform(1.0, 3.0))
            fragment = student.step_slider("notch" if regime == "notch" else "jump")
            took, seen = await student.rerun(fragment)
            made += 1
            results["step_s"].append(took)
            results["wait_s"].append(seen.started_s)
            results["last_step_at"] = time.monotonic()
            record(results, seen, page_hash)
            student.absorb(seen)
        if asking is not None and not (steps and made >= steps):  # one who made its steps leaves, asking no more
            await asking
    except (TimeoutError, websockets.ConnectionClosed, websockets.InvalidStatus, OSError) as exc:
        results["failed"].append(f"{type(exc).__name__}: {exc}"[:200])
    finally:
        if asking is not None:
            asking.cancel()
        if student.ws is not None:
            await student.ws.close()


async def ask_round_state(student: Student, watcher: dict, end_at: float, results: dict) -> None:
    """What the browser does for a page with the class poll's watcher (`ui.poll_watch`): ask its route for the
    quiz's round state every interval until `end_at` (a state other than the one drawn would rerun the poll's
    fragment; this benchmark's rounds, if any, open before the students arrive, so none is expected)."""
    http = HttpConnection(student.http_url, student.cookies)
    interval = watcher["every_ms"] / 1000
    try:
        while time.monotonic() + interval < end_at:
            await asyncio.sleep(interval)
            status, state = await asyncio.wait_for(http.get("/" + watcher["url"]), ANSWER_TIMEOUT_S)
            results["round_state_asks"] = results.get("round_state_asks", 0) + 1
            if status != 200 or state != watcher["state"]:
                results["round_state_changes"] = results.get("round_state_changes", 0) + 1
    finally:
        http.close()


def empty_results() -> dict:
    """What `student_session` fills in for a hall: each list gets an entry per step, visit or failure."""
    return {"first_visit_s": [], "step_s": [], "wait_s": [], "last_step_at": 0.0, "exceptions": 0,
            "exception_texts": [], "failed": [], "interrupted_runs": 0, "round_state_asks": 0,
            "round_state_changes": 0, "front_end_bytes": 0}


def record(results: dict, seen: RunSeen, page_hash: str) -> None:
    """Add a run's exception boxes and early ends to the hall's results."""
    results["exceptions"] += seen.exceptions
    results["exception_texts"] += [f"{page_hash[:6]} {t}" for t in seen.exception_texts]
    results["interrupted_runs"] += seen.interrupted


def random_link(sliders: list[Slider], rng: random.Random) -> dict[str, str]:
    """A link's query with a random valid value for each of a page's URL-bound sliders (as drawn at the defaults:
    a slider whose range follows another's may get a value the page then replaces, as a real link may)."""
    return {s.query_key: option_text(s, rng.choice(grid(s))) for s in sliders if s.query_key}


async def cross_talk(url: str, page_hash: str) -> bool:
    """Two students on the worked example move their seed sliders to different seeds at once: each must get
    back the share link for their own seed, and not the other's."""
    async def own_link(wanted: int) -> list[str]:
        student = Student(url, page_hash, random.Random(wanted))
        await student.connect()
        try:
            _, seen = await student.rerun()
            seed = next(s for s in seen.sliders.values() if s.query_key == "seed")
            student.widget_values[seed.id] = [float(wanted)]
            student.query["seed"] = str(wanted)
            _, seen = await student.rerun(seed.fragment_id)
            return [m for m in seen.markdown if "seed=" in m]
        finally:
            await student.ws.close()

    links = dict(zip((1, 2), await asyncio.gather(own_link(1), own_link(2)), strict=True))
    return all(any(f"seed={wanted}" in m for m in found) and not any(f"seed={3 - wanted}" in m for m in found)
               for wanted, found in links.items())
