"""What a second value that is not the weights is: the scores before the softmax (scaled or not, with the mask's
fill), the log of the weights, the weights transposed, or the output again; each computed from the case and compared
with what the student returned.
"""

from __future__ import annotations

import math

import numpy as np

from exercise.cases import Case
from exercise.measures import raw_scores
from exercise.mistakes import mistaken_attention, same_values

#: A masked score at or below this counts as "filled" (-1e9, -9e15, -inf: what tutorials fill with).
FILLED = -1e4
#: What to return instead, said after every second value recognised.
RETURN_WEIGHTS = ("Return the softmax's output as the second value: `weights = torch.softmax(scores, dim=-1)`, "
                  "then `return weights @ V, weights`.")


def _candidates(case: Case) -> dict[str, np.ndarray]:
    """What a second value is usually, by how it is said, computed on `case` (forbidden scores -inf)."""
    output, weights = mistaken_attention(case.Q, case.K, case.V, mask=case.mask)
    raw = raw_scores(case)
    if case.mask is not None:
        raw = np.where(np.asarray(case.mask) == 0, -np.inf, raw)  # (T, T) broadcast over the batch
    with np.errstate(divide="ignore"):
        log_weights = np.log(weights)
    return {
        "the scores, `Q @ K.transpose(-2, -1) / √d_k`, before the softmax": raw / math.sqrt(np.shape(case.Q)[-1]),
        "the scores before they are scaled and before the softmax, `Q @ K.transpose(-2, -1)`": raw,
        "the log of the weights (`log_softmax`), not the weights": log_weights,
        "the weights transposed, one row per key": np.swapaxes(weights, -1, -2),
        "the output again": output,
    }


def _same_filled(value: np.ndarray, candidate: np.ndarray) -> bool:
    """`value` equals `candidate` where it is finite, and is filled (≤ `FILLED`) where `candidate` is -inf."""
    if value.shape != candidate.shape:
        return False
    finite = np.isfinite(candidate)
    with np.errstate(invalid="ignore"):
        filled = np.all(np.nan_to_num(value[~finite], nan=0.0, neginf=-np.inf) <= FILLED)
    return bool(filled) and same_values(value[finite], candidate[finite])


def second_value(case: Case, value: np.ndarray | None) -> str | None:
    """What the second value returned on `case` is, when it is one of the usual things other than the weights."""
    if value is None:
        return None
    return next((said for said, candidate in _candidates(case).items() if _same_filled(value, candidate)), None)


def second_value_diagnosis(case: Case, value: np.ndarray | None) -> str | None:
    """The second value, said in words, with what to return instead."""
    said = second_value(case, value)
    if said is None:
        return None
    filled = " (with the mask's fill where a key is forbidden)" if case.mask is not None and "scores" in said else ""
    return f"The second value you return is {said}{filled}. {RETURN_WEIGHTS}"
