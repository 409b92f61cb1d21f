"""Known mistakes run through the real checks: the computed answers of the page's "predict, then reveal"."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.reference import max_abs_diff, torch_scaled_dot_product_attention
from exercise.cases import ALLCLOSE_ATOL, ALLCLOSE_RTOL, exercise_cases
from exercise.mistakes import Mistake, mistake_function, mistaken_attention
from exercise.results import run_trusted
from exercise.verdicts import evaluate


@dataclass(frozen=True)
class MistakeDemo:
    """What one known mistake does on the lesson's random test: computed, for "predict, then reveal"."""

    mistake: Mistake
    allclose: bool
    max_abs_diff: float
    first_failed_check: str | None
    largest_weight: float
    largest_weight_correct: float
    row_sum_range: tuple[float, float]


def mistake_demo(mistake: Mistake) -> MistakeDemo:
    """Run the known `mistake` through the same checks as a submission (in-process: it is trusted code)."""
    cases = exercise_cases()
    report = evaluate(run_trusted(mistake_function(mistake), cases), cases)
    rand = cases[0]
    out, w = mistaken_attention(rand.Q, rand.K, rand.V, mistake)
    ref = torch_scaled_dot_product_attention(rand.Q, rand.K, rand.V)  # (2, 5, 16)
    _, w_ok = mistaken_attention(rand.Q, rand.K, rand.V)
    close = out.shape == ref.shape and bool(np.allclose(out, ref, rtol=ALLCLOSE_RTOL, atol=ALLCLOSE_ATOL))
    sums = w.sum(axis=-1)
    return MistakeDemo(
        mistake=mistake,
        allclose=close,
        max_abs_diff=max_abs_diff(out, ref) if out.shape == ref.shape else float("nan"),
        first_failed_check=next((c.name for c in report.checks if not c.passed), None),
        largest_weight=float(w.max()),
        largest_weight_correct=float(w_ok.max()),
        row_sum_range=(float(sums.min()), float(sums.max())),
    )
