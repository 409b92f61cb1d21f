"""Timing helpers shared by the benchmarks (no assertions: figures are reported, not enforced)."""

from __future__ import annotations

import statistics
import time


def median_ms(samples: list[float]) -> float:
    """Median of durations in seconds, in milliseconds rounded to 0.1."""
    return round(statistics.median(samples) * 1000, 1)


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
