"""What Streamlit itself costs the server for one slider step, whatever a page computes or draws.

    python -m benchmarks.floor [--elements 0 20 40] [--steps 100] [--repeats 2] [--app-steps 8]

A page answers a slider step by rerunning its fragment: Streamlit starts a script run, builds and sends every
element the fragment draws, and ends the run. This benchmark serves a page of its own, with one slider in a
fragment that draws N Markdown elements and nothing else, and measures the server's CPU per step (all its
threads, from /proc) for each N, with a client speaking Streamlit's websocket protocol
(`benchmarks.protocol.Student`). It gives:

* the floor: a step of a fragment that draws nothing but its slider;
* the price of one more element: the slope over N;
* with ``--app-steps K``, in the same run, the app's own CPU per step to a setting never seen before, the median
  over its sliders (`benchmarks.new_settings.new_settings_cpu`), as a number of floors and of elements.

The ratio is what the figures of different hours can be compared by: this shared machine's speed changes by up
to two times from one hour to the next, and the floor changes with it.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
from pathlib import Path

from benchmarks.new_settings import new_settings_cpu
from benchmarks.protocol import Student, cpu_s, run_coroutine
from benchmarks.timing import python_loop_s
from devtools.appserver import AppServer

#: The page: one slider in a fragment, and as many Markdown elements as the query string's ``n`` asks for.
PAGE = '''\
import streamlit as st

n = int(st.query_params.get("n", "0"))


@st.fragment
def body() -> None:
    value = st.slider("x", 0, 100_000, 0, key="x")
    for i in range(n):
        st.markdown(f"Element {i} at {value}")


body()
'''


def floor_cpu(elements: list[int], steps: int = 100) -> dict[int, float]:
    """Server CPU per step (ms) of the fragment that draws `n` Markdown elements, for each `n` in `elements`; each
    step moves the slider to a value not had before, so no answer can come from a cache."""
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "floor_page.py"
        script.write_text(PAGE)
        with AppServer(script=str(script)) as server:
            pid = server.proc.pid

            async def one(n: int) -> float:
                student = Student(server.url, "", random.Random(n))
                student.query = {"n": str(n)}
                await student.connect()
                try:
                    _, seen = await student.rerun()
                    student.absorb(seen)
                    slider = next(iter(student.sliders.values()))
                    for value in range(1, 6):  # warm: the first steps import and compile what the rest reuse
                        student.set_slider(slider, value)
                        await student.rerun(slider.fragment_id)
                    before = cpu_s(pid)
                    for value in range(10, 10 + steps):
                        student.set_slider(slider, value)
                        _, seen = await student.rerun(slider.fragment_id)
                        assert sum(1 for m in seen.markdown if m.startswith("Element ")) == n, "elements missing"
                    return (cpu_s(pid) - before) / steps * 1e3
                finally:
                    await student.ws.close()

            return {n: run_coroutine(one(n)) for n in elements}


def slope(per_count: dict[int, float]) -> float:
    """Least-squares ms per element over the counts measured."""
    xs, ys = list(per_count), list(per_count.values())
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.floor", description=__doc__.split("\n\n")[0])
    parser.add_argument("--elements", type=int, nargs="+", default=[0, 20, 40])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--app-steps", type=int, default=0,
                        help="also the app's CPU per new setting, this many steps per slider (0: skip)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/floor_results.json"))
    args = parser.parse_args()
    runs = []
    for repeat in range(args.repeats):
        run = {"repeat": repeat, "python_loop_s": python_loop_s(), "cpu_ms": floor_cpu(args.elements, args.steps)}
        run["floor_ms"] = run["cpu_ms"][min(args.elements)]
        run["ms_per_element"] = slope(run["cpu_ms"]) if len(args.elements) > 1 else float("nan")
        if args.app_steps:
            per_slider = new_settings_cpu(args.app_steps, seed=repeat)
            app_ms = statistics.median(v["cpu_ms"] for v in per_slider.values())
            run["app_new_setting_ms"] = app_ms
            run["app_in_floors"] = app_ms / run["floor_ms"]
            run["app_in_elements_beyond_the_floor"] = (app_ms - run["floor_ms"]) / run["ms_per_element"]
        runs.append(run)
        print(json.dumps(run), flush=True)
    args.out.write_text(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
