"""One student alone on a fresh server, every step to a setting the server has never computed: the server's CPU
and the wall time per step, for each slider of every page (`python -m benchmarks.load` and `benchmarks.floor`
report it). A page's first visit is made before, so what it imports then is not counted.

    python -m benchmarks.new_settings [--pages transformer_block multi_head] [--steps 8] [--seeds 0 1 2]
                                      [--switches] [--profile FILE]

On its own it measures the pages named (their url paths; ``home`` for the landing page), one fresh server per seed,
and prints each run's table and the medians over the runs. With ``--switches``, each radio and toggle bound to the
URL is flipped after the sliders (``page: switch KEY``, listed apart from the sliders' median). The CPU is the
server process's, all threads, read in nanoseconds (`benchmarks.protocol.cpu_s`). With ``--profile FILE``, py-spy samples the server
while the students step (not during the first visits) into FILE and FILE.idle (`benchmarks.profiling`);
``python -m benchmarks.load --summarise FILE --thread ...`` sums it.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from benchmarks.protocol import (
    RunSeen,
    Slider,
    Student,
    cpu_s,
    grid,
    page_hashes,
    page_sliders,
    run_coroutine,
    train_before_class,
)
from benchmarks.profiling import Sampler
from benchmarks.timing import python_loop_s
from devtools.appserver import AppServer, running_or_fresh

#: Server CPU for a step to a setting never computed, median over the pages' sliders (issue #33).
NEW_SETTING_CPU_MS = 20.0


#: The landing page's url path is empty; on the command line it is called this.
HOME = "home"


def chosen_pages(hashes: dict[str, str], pages: Sequence[str] | None) -> dict[str, str]:
    """The pages of `hashes` (url path -> page script hash) whose url paths are in `pages` (`HOME` for the
    landing page), or all of them for None. Raises ValueError naming the pages there are, for a page not among them."""
    if pages is None:
        return hashes
    wanted = {"" if p == HOME else p for p in pages}
    if unknown := wanted - set(hashes):
        known = ", ".join(sorted(p or HOME for p in hashes))
        raise ValueError(f"no page {', '.join(sorted(p or HOME for p in unknown))}; the pages are: {known}")
    return {path: h for path, h in hashes.items() if path in wanted}


def new_settings_cpu(steps_per_slider: int = 8, seed: int = 0, pages: Sequence[str] | None = None,
                     profile: Path | None = None, switches: bool = False,
                     server: AppServer | None = None) -> dict[str, dict[str, float]]:
    """One student alone on a fresh server: on every page (or those whose url paths are in `pages`), each slider in
    turn makes `steps_per_slider` steps to values it has not had before (every other slider where the earlier ones
    left it), so each step asks for a setting the server has never computed. For each slider: the server's CPU and
    the wall time per step. With `switches`, each radio and toggle bound to the URL (a "switch") is then flipped to
    each of its other values in turn, likewise. Every page is visited once first, so that what a page imports on its
    first visit is not counted, nor what the first visits import in the background (`quiet`). With `profile`,
    py-spy samples the server while the student steps (`benchmarks.profiling.Sampler`). With `server`, the student
    steps on that running server, which is left running, without `profile`; a value another session of it asked for
    is computed already."""
    with running_or_fresh(server, profiled=profile is not None) as server, contextlib.ExitStack() as sampling:
        hashes = chosen_pages(page_hashes(server.url), pages)
        train_before_class(server.url, hashes)
        page_sliders(server.url, hashes)
        pid = server.proc.pid
        quiet(pid)
        sampler = None if profile is None else sampling.enter_context(Sampler(pid, profile))

        async def one_page(path: str, page_hash: str, rng: random.Random) -> dict[str, dict[str, float]]:
            student = Student(server.url, page_hash, rng)
            await student.connect()
            figures = {}
            try:
                _, seen = await student.rerun()
                student.absorb(seen)
                page = path or "(home)"
                for name in [slider_name(s) for s in seen.sliders.values()]:
                    visited: set[float] = set()
                    timed = await timed_steps(pid, steps_per_slider,
                                              lambda: step_to_a_new_value(student, name, visited, rng))
                    if timed:
                        figures[f"{page}: {name}"] = timed
                for name in [s.query_key for s in seen.switches.values() if s.query_key and switches]:
                    flipped: set[str] = set()
                    timed = await timed_steps(pid, steps_per_slider, lambda: flip_to_a_new_value(student, name, flipped))
                    if timed:
                        figures[f"{page}: {SWITCH}{name}"] = timed
            finally:
                await student.ws.close()
            return figures

        async def every_page() -> dict[str, dict[str, float]]:
            rng = random.Random(seed)
            return {k: v for path, h in sorted(hashes.items()) for k, v in (await one_page(path, h, rng)).items()}
        figures = run_coroutine(every_page())
        if sampler is not None:  # py-spy writes its files when the process it samples exits
            server.stop()
            sampler.wait(60)
        return figures


async def timed_steps(pid: int, most: int, step: Callable[[], Awaitable[RunSeen | None]]) -> dict[str, float]:
    """At most `most` steps (``await step()``, None when there is none left): the server `pid`'s CPU and the wall
    time per step, and the steps made (an empty dict for none)."""
    cpu_before, t0, steps = cpu_s(pid), time.perf_counter(), 0
    for _ in range(most):
        if await step() is None:
            break
        steps += 1
    if not steps:
        return {}
    return {"cpu_ms": (cpu_s(pid) - cpu_before) / steps * 1e3, "wall_ms": (time.perf_counter() - t0) / steps * 1e3,
            "steps": steps}


def quiet(pid: int, window_s: float = 4.0, idle_share: float = 0.05, timeout_s: float = 60.0) -> bool:
    """Wait until the process `pid` uses less than `idle_share` of a core over `window_s`, at most `timeout_s`:
    whether it did. The imports the first visits start in the background (`ui.warmup.import_in_background`) wait
    3 s before they begin, so a window longer than that sees them."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        before = cpu_s(pid)
        time.sleep(window_s)
        if cpu_s(pid) - before < idle_share * window_s:
            return True
    return False


async def step_to_a_new_value(student: Student, name: str, visited: set[float], rng: random.Random) -> RunSeen | None:
    """Move the slider called `name` to a value not in `visited` (its current value joins them) and run the step;
    what the run sent, or None when the slider is gone or has no such value left."""
    slider = next((s for s in student.sliders.values() if slider_name(s) == name), None)
    if slider is None:
        return None
    visited.add(slider.value[0])
    unseen = [v for v in grid(slider) if v not in visited]
    if not unseen:
        return None
    student.set_slider(slider, rng.choice(unseen))
    _, seen = await student.rerun(slider.fragment_id)
    student.absorb(seen)
    return seen


async def flip_to_a_new_value(student: Student, key: str, flipped: set[str]) -> RunSeen | None:
    """Flip the radio or toggle bound to the URL key `key` to a value not in `flipped` (its current value joins
    them), its options in order, and run the step; what the run sent, or None when it is gone or has no such value
    left. Each flip comes after the sliders' steps, so it too asks for a setting the server has never computed."""
    switch = next((s for s in student.switches.values() if s.query_key == key), None)
    if switch is None:
        return None
    flipped.add(switch.value)
    unseen = [v for v in switch.options if v not in flipped]
    if not unseen:
        return None
    student.set_switch(switch, unseen[0])
    _, seen = await student.rerun(switch.fragment_id)
    student.absorb(seen)
    return seen


#: What a switch's figures are named after its page (its URL key follows): they are listed apart from the sliders'.
SWITCH = "switch "


def slider_name(slider: Slider) -> str:
    """A slider's name that survives a new range (its id does not): its URL key, or its label."""
    return slider.query_key or slider.label



def is_switch(name: str) -> bool:
    """Whether a figure's name (``page: slider`` or ``page: switch key``) is a switch's."""
    return name.split(": ", 1)[1].startswith(SWITCH)


def solo_table(per_slider: dict[str, dict[str, float]]) -> str:
    """The CPU and wall time of a step to a new setting, per slider and switch, and their medians over the sliders."""
    lines = [f"  {'slider':<34}{'CPU ms':>8}{'wall ms':>9}"]
    lines += [f"  {name:<34}{f['cpu_ms']:>8.1f}{f['wall_ms']:>9.1f}" for name, f in per_slider.items()]
    sliders = [f for name, f in per_slider.items() if not is_switch(name)] or list(per_slider.values())
    cpu = statistics.median(f["cpu_ms"] for f in sliders)
    wall = statistics.median(f["wall_ms"] for f in sliders)
    lines.append(f"  {'median over sliders':<34}{cpu:>8.1f}{wall:>9.1f}  target: CPU <= {NEW_SETTING_CPU_MS:g}")
    return "\n".join(lines)


def page_medians(per_slider: dict[str, dict[str, float]]) -> dict[str, float]:
    """Each page's median CPU a step over its sliders, not its switches (page: its url path, as `new_settings_cpu`
    names it)."""
    by_page: dict[str, list[float]] = {}
    for name, f in per_slider.items():
        if is_switch(name):
            continue
        by_page.setdefault(name.split(": ")[0], []).append(f["cpu_ms"])
    return {page: statistics.median(cpu) for page, cpu in by_page.items()}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.new_settings", description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", nargs="+", help=f"url paths of the pages to step ({HOME}: the landing page); "
                                                   "default: every page")
    parser.add_argument("--steps", type=int, default=8, help="steps to new values per slider")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0],
                        help="one fresh server per seed, each stepping to other random values")
    parser.add_argument("--switches", action="store_true",
                        help="also flip each radio and toggle bound to the URL, after the sliders")
    parser.add_argument("--profile", type=Path, help="sample the server of the first seed with py-spy into this file")
    args = parser.parse_args()
    runs = []
    for k, seed in enumerate(args.seeds):
        loop_s = python_loop_s()
        figures = new_settings_cpu(args.steps, seed, args.pages, args.profile if k == 0 else None, args.switches)
        runs.append(figures)
        medians = ", ".join(f"{page} {ms:.1f}" for page, ms in page_medians(figures).items())
        print(f"seed {seed} (python loop {loop_s} s): page medians, CPU ms a step: {medians}")
        print(solo_table(figures), flush=True)
    if len(runs) > 1:
        print(f"Medians over {len(runs)} runs:")
        print(solo_table({name: {k: statistics.median(run[name][k] for run in runs if name in run)
                                 for k in ("cpu_ms", "wall_ms")} for name in runs[0]}))


if __name__ == "__main__":
    main()

