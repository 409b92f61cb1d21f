"""Two mistakes at once: one of the known wrong steps of the formula (`exercise.mistakes`: the scale, the softmax's
axis, the scores) together with a mistake in the structure of the computation (`exercise.structure`). Each pair of
corrections is tried, and the first that explains the student's numbers exactly is named, both halves."""

from __future__ import annotations

import numpy as np

from exercise.cases import Case
from exercise.mistakes import all_mistakes
from exercise.results import RunResult
from exercise.structure import always_causal_diagnosis, sequence_first_diagnosis, transposed_diagnosis

#: The known mistakes a structural one is paired with: one wrong step, the output returned.
SINGLE = tuple(m for m in all_mistakes() if len(m.wrong_parts()) == 1 and m.returns == "output")


def pair_diagnosis(run: RunResult, case: Case, output: np.ndarray, weights: np.ndarray | None) -> list[str] | None:
    """Both mistakes, when one known wrong step and one structural mistake together give `output` (and `weights`)
    exactly on `case` (unmasked); None when no pair does."""
    for mistake in SINGLE:
        try:
            with np.errstate(invalid="ignore"):  # a softmax over the queries of a causal mask's -inf columns: nan
                structural = (transposed_diagnosis(case, output, weights, mistake)
                              or always_causal_diagnosis(run, case, output, weights, mistake)
                              or sequence_first_diagnosis(case, output, weights, mistake))
        except ValueError:  # this mistake's shapes cannot be multiplied on `case`
            continue
        if structural is not None:
            return [*mistake.describe(), structural]
    return None


