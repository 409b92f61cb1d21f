"""One student alone on a fresh server, every step to a setting the server has never computed: the server's CPU
and the wall time per step, for each slider of every page (`python -m benchmarks.load` and `benchmarks.floor`
report it). A page's first visit is made before, so what it imports then is not counted."""

from __future__ import annotations

import random
import statistics
import time

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
from devtools.appserver import AppServer

#: Server CPU for a step to a setting never computed, median over the pages' sliders (issue #33).
NEW_SETTING_CPU_MS = 20.0


def new_settings_cpu(steps_per_slider: int = 8, seed: int = 0) -> dict[str, dict[str, float]]:
    """One student alone on a fresh server: on every page, each slider in turn makes `steps_per_slider` steps to
    values it has not had before (every other slider where the earlier ones left it), so each step asks for a
    setting the server has never computed. For each slider: the server's CPU and the wall time per step.
    Every page is visited once first, so that what a page imports on its first visit is not counted."""
    with AppServer() as server:
        hashes = page_hashes(server.url)
        train_before_class(server.url, hashes)
        page_sliders(server.url, hashes)
        pid = server.proc.pid

        async def one_page(path: str, page_hash: str, rng: random.Random) -> dict[str, dict[str, float]]:
            student = Student(server.url, page_hash, rng)
            await student.connect()
            figures = {}
            try:
                _, seen = await student.rerun()
                student.absorb(seen)
                for name in [slider_name(s) for s in seen.sliders.values()]:
                    visited: set[float] = set()
                    cpu_before, t0, steps = cpu_s(pid), time.perf_counter(), 0
                    for _ in range(steps_per_slider):
                        if await step_to_a_new_value(student, name, visited, rng) is None:
                            break
                        steps += 1
                    if steps:
                        figures[f"{path or '(home)'}: {name}"] = {
                            "cpu_ms": (cpu_s(pid) - cpu_before) / steps * 1e3,
                            "wall_ms": (time.perf_counter() - t0) / steps * 1e3, "steps": steps}
            finally:
                await student.ws.close()
            return figures

        async def every_page() -> dict[str, dict[str, float]]:
            rng = random.Random(seed)
            return {k: v for path, h in sorted(hashes.items()) for k, v in (await one_page(path, h, rng)).items()}
        return run_coroutine(every_page())


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


def slider_name(slider: Slider) -> str:
    """A slider's name that survives a new range (its id does not): its URL key, or its label."""
    return slider.query_key or slider.label



def solo_table(per_slider: dict[str, dict[str, float]]) -> str:
    """The CPU and wall time of a step to a new setting, per slider, and their medians over the sliders."""
    lines = [f"  {'slider':<34}{'CPU ms':>8}{'wall ms':>9}"]
    lines += [f"  {name:<34}{f['cpu_ms']:>8.1f}{f['wall_ms']:>9.1f}" for name, f in per_slider.items()]
    cpu = statistics.median(f["cpu_ms"] for f in per_slider.values())
    wall = statistics.median(f["wall_ms"] for f in per_slider.values())
    lines.append(f"  {'median over sliders':<34}{cpu:>8.1f}{wall:>9.1f}  target: CPU <= {NEW_SETTING_CPU_MS:g}")
    return "\n".join(lines)

