"""Timing helpers shared by the benchmarks (no assertions: figures are reported, not enforced)."""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Iterator


def median_ms(samples: list[float]) -> float:
    """Median of durations in seconds, in milliseconds rounded to 0.1."""
    return round(statistics.median(samples) * 1000, 1)


def percentile(values: list[float], q: float) -> float:
    """The `q` quantile of `values` (nearest rank, no interpolation); NaN when there are none."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


def python_loop_s(n: int = 5_000_000, repeats: int = 3) -> float:
    """Seconds for a fixed pure-Python loop (median of `repeats`): how fast the machine is right now.

    The development machine is shared: the same code runs at different speeds from hour to hour. Runs of
    the benchmark are comparable only alongside this figure.
    """
    samples = []
    for _ in range(repeats):
        t = time.perf_counter()
        total = 0
        for i in range(n):
            total += i
        samples.append(time.perf_counter() - t)
    return round(statistics.median(samples), 3)


def time_reruns(at, repeats: int) -> list[float]:
    """Durations of `repeats` AppTest reruns at the same state, after one warm-up run (caches filled)."""
    at.run()
    samples = []
    for _ in range(repeats):
        t = time.perf_counter()
        at.run()
        samples.append(time.perf_counter() - t)
        if at.exception:
            raise RuntimeError(f"exception during benchmark: {at.exception[0].value}")
    return samples


@contextlib.contextmanager
def server_like_script_cache() -> Iterator[None]:
    """Let AppTest keep the scripts' compiled bytecode between runs, as `streamlit run` does.

    AppTest builds a fresh script cache on every run, so each measured rerun would also recompile the router and
    the page (2 to 30 ms, more for long pages), which a real server does once. This swaps in one shared cache for
    the duration of the block (AppTest's internals, so only in the benchmark, never in tests).
    """
    import streamlit.testing.v1.app_test as app_test
    import streamlit.testing.v1.local_script_runner as local_runner
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache

    shared = ScriptCache()
    saved = app_test.ScriptCache, local_runner.ScriptCache
    app_test.ScriptCache = local_runner.ScriptCache = lambda: shared
    try:
        yield
    finally:
        app_test.ScriptCache, local_runner.ScriptCache = saved
