"""Every weight equal: each row of the weights is uniform, 1/T, so the output is the mean of V's rows, whatever
the query. A softmax gives that only when every score of a row is the same number:

.. math:: \\operatorname{softmax}(c, c, \\dots, c)_j = \\frac{e^c}{T e^c} = \\frac{1}{T}

which happens when something fills every score with one value (a mask of the wrong polarity, with nothing to
pad), or when the scores are divided by a number so large that they are all about 0.
"""

from __future__ import annotations

import math

import numpy as np

from exercise.calls import lines_said
from exercise.cases import Case
from exercise.measures import recovered_scale
from exercise.numbers import message_template, number
from exercise.results import RunResult

#: How far from 1/T a weight may be in rows said to be uniform (they look the same to a student at 3 digits).
UNIFORM_ATOL = 1e-4
#: Divisors this many times √d_k and more make the scores about 0: "far too large".
FAR_TOO_LARGE = 100.0


def uniform_rows(case: Case, output: np.ndarray, weights: np.ndarray | None) -> bool:
    """Whether every row of the weights is 1/T (read off the output, the mean of V's rows, when there are none)."""
    V = np.asarray(case.V, dtype=np.float64)
    T = V.shape[-2]
    if weights is not None:
        return weights.shape[-1] == T and bool(np.allclose(weights, 1 / T, rtol=0, atol=UNIFORM_ATOL))
    mean = np.broadcast_to(V.mean(axis=-2, keepdims=True), V.shape)  # (..., 1, d_v) -> (..., T, d_v)
    return output.shape == V.shape and bool(np.allclose(output, mean, rtol=UNIFORM_ATOL, atol=UNIFORM_ATOL))


@message_template
def uniform_message(T: int, reason: str) -> str:
    """Weights of 1/`T` everywhere, and why that happened (`reason`)."""
    return (f"Every weight is the same, 1/{T} = {number(1 / T)} in every row: each query attends equally to all {T} "
            "keys, so your output is the mean of V's rows, whatever the query. A softmax gives that only when every "
            f"score of a row is the same number: {reason}")


@message_template
def too_large_message(divisor: float, d_k: int, named: str) -> str:
    """Scores divided by `divisor`, so large that they are all about 0."""
    return (f"your scores are divided by {number(divisor)}{named}, so they are all about 0 and e⁰ = 1 for every key. "
            f"Divide by √d_k = √{d_k} = {number(math.sqrt(d_k))}: `Q.size(-1) ** 0.5`.")


def _reversed_mask(run: RunResult) -> bool:
    """Whether the worked example with the causal mask came back with the mask reversed: zero weight on the keys
    each query may see (all but the last row), weight on the others."""
    res = run.cases.get("worked_causal")
    w = None if res is None else res.weights
    if w is None or w.ndim != 2 or w.shape[0] != w.shape[1]:
        return False
    allowed = np.tril(np.ones(w.shape, dtype=bool))
    rows = slice(0, w.shape[0] - 1)
    return bool(np.all(np.abs(w[rows][allowed[rows]]) < 1e-6) and np.all(np.nan_to_num(w[rows][~allowed[rows]]) > 0))


def uniform_diagnosis(run: RunResult, case: Case, output: np.ndarray, weights: np.ndarray | None) -> str | None:
    """Rows of weights that are all 1/T, on an unmasked case, and the reason the numbers show."""
    if not uniform_rows(case, output, weights):
        return None
    T, d_k = np.shape(case.K)[-2], np.shape(case.Q)[-1]
    factor = recovered_scale(case, output, weights)
    if factor is not None and 0 < factor < 1 / (FAR_TOO_LARGE * math.sqrt(d_k)):
        divisor = 1 / factor
        named = next((f", `{c.name}` set on {c.shown()}" for c in run.reading.constants
                      if c.value is not None and math.isclose(c.value, divisor, rel_tol=1e-2)), "")
        return uniform_message(T, too_large_message(divisor, d_k, named))
    where = lines_said(run.reading.fills)
    if _reversed_mask(run):
        return uniform_message(T, "your mask is filled where it is 1, the keys a query may see (the causal check "
                                  "shows it reversed), and with no mask given every key may be seen, so every score "
                                  "is filled" + (f", on {where}" if where else "") + ". Fill where `mask == 0`, and "
                                  "fill nothing when there is no mask.")
    return uniform_message(T, "something sets every score to one value" + (f", on {where}?" if where else "")
                           + ". Fill only the scores a mask forbids, where `mask == 0`.")
