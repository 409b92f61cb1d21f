"""The train storm: a lecturer says "everyone: train your own", on one server process.

    python -m benchmarks.load --regimes storm [--trainers 20] [--students 20] [--train-pages decoder training]
                              [--pin 0] [--repeats 3] [--train-steps 100] [--deadline 900]

`trainers` simulated students (`benchmarks.protocol.Student`, Streamlit's websocket protocol) arrive within a few
seconds, spread over the pages that train (`TRAIN_PAGES`), each at a setting of their own (the page's defaults,
another seed), and press Train; `others` jump around the other pages meanwhile: open one (a first visit), make up
to `STEPS_PER_VISIT` slider steps to any value with 1–3 s pauses, leave, open another, until every trainer is done.

Reported per run (`STORM_KEYS`): trainings finished; time to trained (from pressing Train to the end of the run
that trained, if the page then reads "Trained") and the wait in line (to the first training step shown), medians
and the largest; the longest a trainer went without a message from the server (its progress or its place in line);
the others' steps and opens (p50, p95); the server's share of a core; the peak memory of the server's whole process
tree (RSS and PSS, sampled as in `benchmarks.memory`). With ``--pin CPU`` the server runs under ``taskset -c CPU``
(the students never are); ``--train-steps`` gives every trainer that many training steps instead of the page's.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import websockets
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

from benchmarks.memory import Peaks, sample_tree
from benchmarks.profiling import Sampler
from benchmarks.protocol import Student, cpu_s, page_hashes, run_coroutine
from benchmarks.students import empty_results, record
from benchmarks.timing import percentile
from devtools.appserver import AppServer

#: The pages whose Train button the storm presses; a trainer's own setting is another seed of the defaults.
TRAIN_PAGES = ("decoder", "training")
#: The pages the others do not visit: the two that train, and the exercise (its check is another benchmark's).
NOT_BROWSED = (*TRAIN_PAGES, "exercise")
STEPS_PER_VISIT = 3
DEADLINE_S = 900.0  # a storm that has not ended by then is reported as it stands (`--deadline`)
#: The trained page's metric whose help gives the run's CPU seconds ("…; 2.4 s of CPU in the training thread.").
TRAINING_METRIC, TRAINING_CPU = "Training time", re.compile(r"([0-9.]+) s of CPU")
PROGRESS_PREFIX = "step "  # a progress bar's text while training (the line's reads "Waiting in line: …")
STORM_KEYS = ["trainers", "finished", "trained_p50_s", "trained_max_s", "line_wait_p50_s", "line_wait_max_s",
              "silence_max_s", "others_step_p50_ms", "others_step_p95_ms", "others_open_p50_s", "others_open_p95_s",
              "others_steps", "training_cpu_s", "server_cpu_s", "server_cpu_share", "tree_rss_peak_mb",
              "tree_pss_peak_mb", "exceptions", "failed_sessions", "python_loop_s"]
STORM_TARGETS = {"trained_max_s": 60.0, "others_step_p95_ms": 1000.0, "others_open_p95_s": 1.0,
                 "tree_pss_peak_mb": 2700.0}


@dataclass
class Training:
    """What one trainer saw, in seconds from pressing Train."""

    page: str
    first_step_s: float | None = None  # the first training step drawn: the wait in line ended
    trained_s: float | None = None  # the run that trained it ended (if the page then says "Trained")
    silence_s: float = 0.0  # the longest time without a message from the server
    places: list[str] = field(default_factory=list)  # the line's sentences drawn
    cpu_s: float | None = None  # the run's CPU seconds in its training thread, as the trained page says


async def train_one(url: str, page_hash: str, page: str, query: dict[str, str], arrive_s: float, results: dict,
                    trainings: list[Training]) -> None:
    """Open `page` at the link's `query` (its seed sets the student apart), press Train, and follow the run to the
    end."""
    await asyncio.sleep(arrive_s)
    student = Student(url, page_hash, random.Random(query["seed"]))
    student.query = dict(query)
    training = Training(page)
    try:
        await student.connect()
        _, seen = await student.rerun()
        record(results, seen, page_hash)
        button_id, fragment = seen.widgets["Train"]
        student.extra_states = [WidgetState(id=button_id, trigger_value=True)]
        pressed = last = time.perf_counter()

        def heard(at: float, fm: ForwardMsg) -> None:
            nonlocal last
            training.silence_s = max(training.silence_s, at - last)
            last = at
            if fm.WhichOneof("type") == "delta" and fm.delta.new_element.WhichOneof("type") == "progress":
                text = fm.delta.new_element.progress.text
                if text.startswith(PROGRESS_PREFIX) and training.first_step_s is None:
                    training.first_step_s = at - pressed
                elif text.startswith("Waiting in line"):
                    training.places.append(text)

        def trained(_at: float, fm: ForwardMsg) -> None:
            if fm.WhichOneof("type") == "delta" and fm.delta.new_element.WhichOneof("type") == "metric":
                metric = fm.delta.new_element.metric
                found = TRAINING_CPU.search(metric.help) if metric.label == TRAINING_METRIC else None
                if found:
                    training.cpu_s = float(found.group(1))

        _, seen = await student.rerun(fragment, heard)
        ended = time.perf_counter() - pressed
        record(results, seen, page_hash)
        _, seen = await student.rerun(heard=trained)  # the page again, as the student's next step shows it
        record(results, seen, page_hash)
        if "Trained" in seen.widgets:
            training.trained_s = ended
    except (TimeoutError, websockets.ConnectionClosed, websockets.InvalidStatus, OSError, KeyError) as exc:
        results["failed"].append(f"trainer {page} {query}: {type(exc).__name__}: {exc}"[:200])
    finally:
        trainings.append(training)
        if student.ws is not None:
            await student.ws.close()


async def browse(url: str, hashes: list[str], rng: random.Random, arrive_s: float, done: asyncio.Event,
                 results: dict) -> None:
    """Open a random page, make up to `STEPS_PER_VISIT` steps, leave, again, until `done`."""
    await asyncio.sleep(arrive_s)
    while not done.is_set():
        student = Student(url, rng.choice(hashes), rng)
        try:
            arrived = time.perf_counter()
            await student.connect()
            _, seen = await student.rerun()
            results["first_visit_s"].append(time.perf_counter() - arrived)
            record(results, seen, student.page_hash)
            student.absorb(seen)
            for _ in range(STEPS_PER_VISIT):
                if not student.sliders or done.is_set():
                    break
                await asyncio.sleep(rng.uniform(1.0, 3.0))
                took, seen = await student.rerun(student.step_slider("jump"))
                results["step_s"].append(took)
                record(results, seen, student.page_hash)
                student.absorb(seen)
        except (TimeoutError, websockets.ConnectionClosed, websockets.InvalidStatus, OSError) as exc:
            results["failed"].append(f"browser: {type(exc).__name__}: {exc}"[:200])
        finally:
            if student.ws is not None:
                await student.ws.close()


def one_storm(trainers: int, others: int, pages: tuple[str, ...] = ("decoder",), seed: int = 0,
              pin: str | None = None, arrival_s: float = 5.0, deadline_s: float = DEADLINE_S,
              steps: int | None = None, profile: Path | None = None) -> dict:
    """One storm on a fresh server (pinned to CPU `pin` if given), the trainers followed for `deadline_s` at most,
    each at its page's defaults but its seed (and `steps` training steps, if given): the figures of `STORM_KEYS`.
    With `profile`, py-spy samples the server into that file (`benchmarks.profiling.Sampler`)."""
    from benchmarks.timing import python_loop_s

    machine_speed_s = python_loop_s()
    with tempfile.TemporaryDirectory() as poll_data, AppServer(
            env={"ATTENTION_POLL_DATA_DIR": poll_data},
            prefix=["taskset", "-c", pin] if pin is not None else ()) as server, contextlib.ExitStack() as sampling:
        profiler = None if profile is None else sampling.enter_context(Sampler(server.proc.pid, profile))
        peaks, stop = Peaks(), threading.Event()
        memory = threading.Thread(target=sample_tree, args=(server.proc.pid, peaks, stop, time.monotonic()),
                                  daemon=True)
        memory.start()
        hashes = page_hashes(server.url)
        browsed = [h for path, h in sorted(hashes.items()) if path not in NOT_BROWSED]
        rng = random.Random(seed)
        results, trainings = empty_results(), []

        async def storm() -> None:
            done = asyncio.Event()
            links = [{"seed": str(1 + k)} | ({} if steps is None else {"steps": str(steps)}) for k in range(trainers)]
            pressing = [train_one(server.url, hashes[pages[k % len(pages)]], pages[k % len(pages)], links[k],
                                  rng.uniform(0, arrival_s), results, trainings) for k in range(trainers)]
            browsing = [asyncio.create_task(browse(server.url, browsed, random.Random(seed * 1000 + k),
                                                   rng.uniform(0, arrival_s), done, results)) for k in range(others)]
            try:
                await asyncio.wait_for(asyncio.gather(*pressing), deadline_s)
            except TimeoutError:
                results["failed"].append(f"the storm had not ended after {deadline_s:g} s")
            finally:
                done.set()
                await asyncio.gather(*browsing)

        cpu_before, started = cpu_s(server.proc.pid), time.monotonic()
        run_coroutine(storm())
        cpu_used = cpu_s(server.proc.pid) - cpu_before
        cpu_share = cpu_used / (time.monotonic() - started)
        stop.set()
        memory.join()
        if profiler is not None:  # py-spy writes its files when the process it samples exits
            server.stop()
            profiler.wait(60)
    return storm_figures(trainings, results, trainers, cpu_used, cpu_share, peaks) | {"python_loop_s": machine_speed_s}


def storm_figures(trainings: list[Training], results: dict, trainers: int, cpu_used: float, cpu_share: float,
                  peaks: Peaks) -> dict:
    """The figures of `STORM_KEYS`; `cpu_used` is the server's CPU seconds over the storm, `cpu_share` the same a
    second of it."""
    trained = [t.trained_s for t in trainings if t.trained_s is not None]
    waits = [t.first_step_s for t in trainings if t.first_step_s is not None]
    mb = 1024 * 1024
    return {
        "trainers": trainers, "finished": len(trained),
        "trained_p50_s": percentile(trained, 0.5), "trained_max_s": max(trained, default=float("nan")),
        "line_wait_p50_s": percentile(waits, 0.5), "line_wait_max_s": max(waits, default=float("nan")),
        "silence_max_s": max((t.silence_s for t in trainings), default=float("nan")),
        "others_step_p50_ms": percentile(results["step_s"], 0.5) * 1e3,
        "others_step_p95_ms": percentile(results["step_s"], 0.95) * 1e3,
        "others_open_p50_s": percentile(results["first_visit_s"], 0.5),
        "others_open_p95_s": percentile(results["first_visit_s"], 0.95),
        "others_steps": len(results["step_s"]), "training_cpu_s": sum(t.cpu_s or 0.0 for t in trainings),
        "server_cpu_s": cpu_used, "server_cpu_share": cpu_share,
        "tree_rss_peak_mb": peaks.tree_rss / mb, "tree_pss_peak_mb": peaks.tree_pss / mb,
        "exceptions": results["exceptions"], "failed_sessions": len(results["failed"]),
        "failures": results["failed"][:5], "exception_texts": sorted(set(results["exception_texts"]))[:5],
        "places_seen": sum(len(t.places) for t in trainings),
        "by_page": {page: sum(t.trained_s is not None for t in trainings if t.page == page)
                    for page in sorted({t.page for t in trainings})},
    }


def storm_summary(runs: list[dict]) -> dict:
    return {k: statistics.median(r[k] for r in runs) for k in STORM_KEYS}


def storm_table(summaries: dict[str, dict]) -> str:
    """The storms' medians side by side, with the targets."""
    width = max(16, *(len(h) + 2 for h in summaries))
    lines = [f"  {'':<20}" + "".join(f"{h:>{width}}" for h in summaries) + "  target"]
    for k in STORM_KEYS:
        cells = "".join(f"{v[k]:>{width}.4g}" for v in summaries.values())
        target = STORM_TARGETS.get(k)
        lines.append(f"  {k:<20}{cells}" + (f"  <= {target:g}" if target is not None else ""))
    return "\n".join(lines)


def main_storm(trainers: int, others: int, pages: tuple[str, ...], repeats: int, pin: str | None,
               deadline_s: float = DEADLINE_S, steps: int | None = None, profile: Path | None = None) -> dict:
    """`repeats` storms, printed as medians: what `python -m benchmarks.load --regimes storm` runs (the first
    one sampled into `profile`, if given)."""
    runs = [one_storm(trainers, others, pages, seed, pin, deadline_s=deadline_s, steps=steps,
                      profile=profile if seed == 0 else None)
            for seed in range(repeats)]
    name = f"storm, {trainers} on {'+'.join(pages)}{'' if steps is None else f' ({steps} steps)'}, {others} others"
    print(f"{name}, {repeats} repeat(s), medians" + (f", server pinned to CPU {pin}" if pin is not None else ""))
    print(storm_table({name: storm_summary(runs)}))
    return {name: {"runs": runs, "median": storm_summary(runs)}}


if __name__ == "__main__":
    raise SystemExit("run it as python -m benchmarks.load --regimes storm")
