r"""A bounded function applied to the scores after the mask: it turns the mask's -inf into a finite number, so the
forbidden keys keep weight.

.. math:: \tanh(-\infty) = -1, \qquad \sigma(-\infty) = 0, \qquad c \tanh(-\infty / c) = -c

`squash_match` finds the function (``tanh``, ``sigmoid``, or a soft cap :math:`c \tanh(x / c)`, its c from the
source's numbers or fitted) whose ``softmax(g(masked scores)) V`` is the student's output.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from exercise.cases import Case
from exercise.measures import grid_then_golden, raw_scores
from exercise.mistakes import same_values, softmax_over
from exercise.numbers import message_template, number
from exercise.results import RunResult


class Squash(NamedTuple):
    """A bounded function of the scores: how it is written, what it makes of -inf, and the function itself."""

    written: str
    of_minus_inf: float
    fn: Callable[[np.ndarray], np.ndarray]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


@message_template
def soft_cap_written(cap: float) -> str:
    """A soft cap as the message writes it."""
    return f"{number(cap)} · tanh(scores / {number(cap)})"


def soft_cap(cap: float) -> Squash:
    """``cap * tanh(scores / cap)``: a soft cap on the scores' size (Gemma 2's logit soft-capping)."""
    return Squash(soft_cap_written(cap), -cap, lambda x: cap * np.tanh(x / cap))


SQUASHES = {"tanh": Squash("tanh(scores)", -1.0, np.tanh), "sigmoid": Squash("sigmoid(scores)", 0.0, _sigmoid)}


def squashed_attention(case: Case, squash: Squash) -> tuple[np.ndarray, np.ndarray]:
    """``softmax(g(mask(Q Kᵀ / √d_k))) V`` and its weights: `squash` applied after the mask."""
    scores = raw_scores(case) / math.sqrt(np.shape(case.Q)[-1])
    if case.mask is not None:
        scores = np.where(np.asarray(case.mask) == 0, -np.inf, scores)  # (T, T) broadcast over the batch
    weights = softmax_over(squash.fn(scores), -1)
    return weights @ np.asarray(case.V, dtype=np.float64), weights  # (..., T, T) @ (..., T, d_v)


def _fitted_cap(case: Case, output: np.ndarray) -> float | None:
    """The soft cap c whose output is closest to `output`: a grid over log c, then a golden-section refinement."""
    def error(log_c: float) -> float:
        return float(np.max(np.abs(squashed_attention(case, soft_cap(math.exp(log_c)))[0] - output)))

    if output.shape != np.shape(case.V) or not np.all(np.isfinite(output)):
        return None
    return math.exp(grid_then_golden(error, np.linspace(-2.0, 7.0, 91), 40))


def squash_match(run: RunResult, case: Case, output: np.ndarray, weights: np.ndarray | None) -> Squash | None:
    """The bounded function, applied after the mask, that gives the student's output (and weights) on `case`; soft
    caps are tried only when the source calls ``tanh``."""
    candidates = list(SQUASHES.values())
    if any(line.name == "tanh" for line in run.reading.squash):
        candidates += [soft_cap(c.value) for c in run.reading.constants if c.value is not None and c.value > 0]
        fitted = _fitted_cap(case, output)
        candidates += [] if fitted is None else [soft_cap(fitted)]
    for squash in candidates:
        out, w = squashed_attention(case, squash)
        if same_values(output, out) and (weights is None or same_values(weights, w)):
            return squash
    return None


def _where(run: RunResult) -> str:
    lines = run.reading.squash
    return f", on {lines[0].shown()}" if len(lines) == 1 else ""


@message_template
def squash_message(written: str, of_minus_inf: float, where: str) -> str:
    """Scores passed through `written` after the mask, which makes -inf into `of_minus_inf`."""
    return (f"Your scores go through {written} after the mask{where}: the softmax of that is exactly your output. It "
            f"turns the mask's -inf into {number(of_minus_inf)}, a finite score, so a forbidden key keeps weight. "
            "The formula has no such function: remove it, or apply it before the mask, so that the mask's -inf is the "
            "last thing the scores get before the softmax.")


def squash_diagnosis(run: RunResult, case: Case, output: np.ndarray, weights: np.ndarray | None) -> str | None:
    """A bounded function after the mask, named with what it makes of -inf and its line."""
    squash = squash_match(run, case, output, weights)
    if squash is None:
        return None
    return squash_message(squash.written, squash.of_minus_inf, _where(run))
