"""Which mistake the student made: found by measuring their numbers and by comparing them with the usual
wrong versions. Every diagnosis is plain text that names what to fix and the numbers that show it. (A masked
case's weights are explained by `exercise.mask_diagnosis`.)"""

from __future__ import annotations

import math

import numpy as np

from exercise.cases import Case
from exercise.measures import (
    D_K_POWERS,
    named_number,
    recovered_scale,
    scale_after_softmax,
    sequence_first_attention,
)
from exercise.mistakes import match_mistake, mistaken_attention, same_values
from exercise.numbers import message_template, number
from exercise.results import RunResult


def scale_diagnosis(case: Case, output: np.ndarray, weights: np.ndarray | None) -> str | None:
    """The factor the scores were scaled by, when a wrong constant factor is the whole mistake."""
    factor = recovered_scale(case, output, weights)
    if factor is None or factor <= 0:
        return None
    return scale_message(factor, np.shape(case.Q)[-1])


@message_template
def scale_message(factor: float, d_k: int) -> str:
    """Scores scaled by `factor` instead of 1/√d_k."""
    right = f"the formula divides them by √d_k = √{d_k} = {number(math.sqrt(d_k))}"
    if 0 < factor < 1:
        said = f"Your scores are divided by {named_number(1 / factor)}, while {right}."
    else:
        said = f"Your scores are multiplied by {named_number(factor)}, while {right}."
    return (said + " d_k is the size of the last dimension of Q and K: `Q.size(-1)`, and the divisor is its "
                   "square root: `Q.size(-1) ** 0.5`.")


def scale_after_softmax_diagnosis(run: RunResult, case: Case, output: np.ndarray,
                                  weights: np.ndarray | None) -> str | None:
    """The scale multiplied into the weights after a softmax of unscaled scores; the softmax's line when the
    source has one softmax."""
    p = scale_after_softmax(case, output, weights)
    if p is None:
        return None
    d_k = np.shape(case.Q)[-1]
    softmax = run.reading.softmax
    where = f"on {softmax[0].shown()}, " if len(softmax) == 1 else ""
    return scale_after_softmax_message(float(d_k**p), d_k, D_K_POWERS[p], weights is not None, where)


@message_template
def power_said(value: float, d_k: int, power_name: str) -> str:
    """``0.25 = 1/√16 = 1/√d_k``: a power of d_k, its value and its name."""
    return f"{number(value)} = {power_name.replace('d_k', str(d_k))} = {power_name}"


@message_template
def scale_after_softmax_message(row_sum: float, d_k: int, power_name: str, has_weights: bool, where: str) -> str:
    """The weights (or the output) of a softmax of unscaled scores multiplied by `row_sum`, a power of d_k."""
    said = power_said(row_sum, d_k, power_name)
    seen = (f"Every row of your weights sums to {said}, not 1 (d_k = {d_k})" if has_weights else
            f"Your output is that of unscaled scores multiplied by {said} (d_k = {d_k}), so your weights sum to "
            f"{number(row_sum)}, not 1")
    return (f"{seen}: the scale was applied after the softmax, to the weights, where it multiplies every weight by "
            "the same number. It belongs on the scores, before the softmax: "
            f"{where}take the softmax of `scores / Q.size(-1) ** 0.5`, and leave the weights as it gives them.")


def scaled_rows_message(row_sum: float, d_k: int, power_name: str) -> str:
    """Rows of weights that all sum to `row_sum`, a power of d_k: the scale applied after the softmax."""
    return (f"Every row sums to {power_said(row_sum, d_k, power_name)} (d_k = {d_k}): a softmax multiplied by "
            "the scale after it. The scale belongs on the scores, before the softmax (see the diagnosis).")


def sequence_first_diagnosis(case: Case, output: np.ndarray, weights: np.ndarray | None) -> str | None:
    """Attention computed over the first dimension, as if the tensors were ``(seq_len, batch, d_k)``."""
    if np.ndim(case.Q) != 3:
        return None
    expected_out, expected_w = sequence_first_attention(case)
    if not same_values(output, expected_out):
        return None
    B, T, d_k = np.shape(case.Q)
    shape = "" if weights is None else f" (your weights have shape {tuple(weights.shape)}: {B} × {B} maps)"
    return (f"Your function reads the first dimension as the sequence: on Q of shape ({B}, {T}, {d_k}) each of the "
            f"{T} positions attends across the {B} items of the batch{shape}. That is the (seq_len, batch, d_k) "
            "layout of nn.MultiheadAttention without batch_first=True; the exercise's tensors are "
            "(batch, seq_len, d_k), so a query attends over dim -2: `Q @ K.transpose(-2, -1)` with no transpose "
            "of the first two dimensions.")


def diagnose(run: RunResult, cases: tuple[Case, ...]) -> list[str]:
    """Recognise the mistake: the usual wrong versions first, then what the numbers measure."""
    by_name = {c.name: c for c in cases}
    found: list[str] = []
    expected = {name: mistaken_attention(c.Q, c.K, c.V, mask=c.mask) for name, c in by_name.items()}

    # Which case shows the mistake: the lesson's shape if the function ran on it, else the square probe.
    for name in ("random", "probe"):
        res = run.cases.get(name)
        if res is None or not res.ok or res.output is None:
            continue
        exp_out, exp_w = expected[name]
        weights = res.weights if res.kind == "pair" else None
        if res.kind == "pair" and same_values(res.output, exp_w) and same_values(res.weights, exp_out):
            found.append("Output and weights swapped: you return `(weights, output)`; the lesson's order is "
                         "`(output, weights)`.")
            break
        if same_values(res.output, exp_out):
            if res.kind == "pair" and res.weights is not None and not same_values(res.weights, exp_w):
                found.append("Your output is right, but the second value you return is not the attention weights: "
                             "return the weights after the softmax.")
            break
        mistake = match_mistake(by_name[name], res.output)
        measured = (sequence_first_diagnosis(by_name[name], res.output, weights)
                    or scale_diagnosis(by_name[name], res.output, weights)
                    or scale_after_softmax_diagnosis(run, by_name[name], res.output, weights))
        if mistake is not None:
            found.extend(mistake.describe())
        elif measured is not None:
            found.append(measured)
        elif same_values(res.output, exp_out, rtol=1e-2, atol=1e-3):
            found.append("Close, but not within `allclose`'s tolerance: did you compute in lower precision "
                         f"(float16 / bfloat16)? Your output is {res.output_desc}.")
        else:
            found.append("Your output does not match any of the usual mistakes. Compare each step with the formula: "
                         "scores `Q @ K.transpose(-2, -1)`, divided by `Q.size(-1) ** 0.5`, `softmax(dim=-1)`, "
                         "then `@ V`.")
        break
    return found
