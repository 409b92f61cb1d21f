"""The cost page's sentences on the measured slopes and on a model's context limit, from `cost.measure` results."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from cost.measure import METHODS, SlopeFit


def measured_slopes(fits: Mapping[str, SlopeFit]) -> str:
    """The slopes expected of each implementation, then the ones measured here, so the text never claims a number
    the metrics above it contradict."""
    measured = "; ".join(
        f"{METHODS[f.method]}: time {f.time_slope:.2f}"
        + (f", memory {f.memory_slope:.2f}" if np.isfinite(f.memory_slope) else "")
        for f in fits.values() if np.isfinite(f.time_slope))
    return (
        "Expected: both PyTorch versions do the same T² work, so once T is large enough for the arithmetic to "
        "dominate their time slopes approach 2; the fused kernel is faster mainly because it never writes the big "
        "matrix to memory. Memory is where they part: a slope of 2 for the naive versions (the T × T matrices), 1 "
        "for the fused kernel (only Q, K, V, the output and small blocks). "
        + (f"Measured on this server: {measured}. Small sizes and a busy machine bend the lines, which is why the "
           "fit starts at the size named above." if measured else "Too few sizes were measured to fit a slope.")
    )


def context_limit(model: str, limit: int, contexts: Sequence[int]) -> str:
    """Which rows of the table the model can read at all: those up to its context limit."""
    beyond = [n for n in contexts if n > limit]
    name = model.split(" (")[0]
    if not beyond:
        return f"{name} reads up to {limit:,} tokens, so every row of the table is a length it can read."
    return (f"{name} reads at most {limit:,} tokens: the rows from {beyond[0]:,} up are its shape stretched past what "
            "it can read, to show how the T² grows, not a setting it can run.")
