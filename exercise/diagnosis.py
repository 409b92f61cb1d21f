"""Which mistake the student made: found by comparing their numbers with the usual wrong versions."""

from __future__ import annotations

import math

import numpy as np

from exercise.cases import Case
from exercise.mistakes import match_mistake, mistaken_attention, same_values, softmax_over
from exercise.results import RunResult


def mask_diagnosis(run: RunResult, case: Case, w: np.ndarray) -> str:
    allowed = case.mask.astype(bool) if case.mask is not None else None
    assert allowed is not None
    T = allowed.shape[0]
    unmasked = run.cases.get("worked")
    if unmasked is not None and same_values(w, unmasked.weights):
        return ("Your mask has no effect: the weights are the same as without it. Before the softmax, set the "
                "forbidden scores to -inf: `scores.masked_fill(mask == 0, float('-inf'))`.")
    rows = range(T - 1)  # every row but the last still has a future key to (wrongly) attend to
    above = w[~allowed]
    if all(np.all(np.abs(w[i, : i + 1]) < 1e-6) for i in rows) and np.any(np.nan_to_num(above) > 0):
        msg = ("**Mask polarity reversed**: the weights on and below the diagonal are 0 and those above it are "
               "not, so each token attends only to the future. The mask is 1 where attending is *allowed*: "
               "fill where `mask == 0`, not where `mask == 1`.")
        if np.isnan(w[T - 1]).any():
            msg += " (The last row has no key left at all, hence the NaN.)"
        return msg
    if np.all(np.isfinite(above)) and float(np.max(np.abs(above))) < 1e-6:
        return (f"Almost: the weights above the diagonal are tiny ({np.max(np.abs(above)):.1e}) but not exactly 0. "
                "Fill with `float('-inf')`, whose exponential is exactly 0.")
    scores = case.Q.astype(np.float64) @ case.K.astype(np.float64).T / math.sqrt(case.Q.shape[-1])  # (3, 3)
    if same_values(w, softmax_over(np.where(allowed, scores, 0.0), -1)):
        return ("You set the forbidden scores to 0, but e⁰ = 1, so future tokens still get weight. "
                "Fill them with `float('-inf')` instead.")
    return (f"The weights above the diagonal are not zero (the largest is {np.max(np.abs(np.nan_to_num(above))):.3f}): "
            "tokens still attend to the future.")


def diagnose(run: RunResult, cases: tuple[Case, ...]) -> list[str]:
    """Recognise the usual mistakes by comparing the returned tensors with known wrong variants."""
    by_name = {c.name: c for c in cases}
    found: list[str] = []
    rand = run.cases.get("random")
    probe = run.cases.get("probe")
    worked = run.cases.get("worked")
    expected = {name: mistaken_attention(c.Q, c.K, c.V, mask=c.mask) for name, c in by_name.items()}

    # Which case shows the mistake: the lesson's shape if the function ran on it, else the square probe.
    for name, res in (("random", rand), ("probe", probe)):
        if res is None or not res.ok or res.output is None:
            continue
        exp_out, exp_w = expected[name]
        if res.kind == "pair" and same_values(res.output, exp_w) and same_values(res.weights, exp_out):
            found.append("**Output and weights swapped**: you return `(weights, output)`; the lesson's order is "
                         "`(output, weights)`.")
            break
        if same_values(res.output, exp_out):
            if res.kind == "pair" and res.weights is not None and not same_values(res.weights, exp_w):
                found.append("Your output is right, but the second value you return is not the attention weights: "
                             "return the weights *after* the softmax.")
            break
        mistake = match_mistake(by_name[name], res.output)
        if mistake is not None:
            found.extend(mistake.describe())
        elif same_values(res.output, exp_out, rtol=1e-2, atol=1e-3):
            found.append("Close, but not within `allclose`'s tolerance: did you compute in lower precision "
                         f"(float16 / bfloat16)? Your output is {res.output_desc}.")
        else:
            found.append("Your output does not match any of the usual mistakes. Compare each step with the formula: "
                         "scores `Q @ K.transpose(-2, -1)`, divided by `Q.size(-1) ** 0.5`, `softmax(dim=-1)`, "
                         "then `@ V`.")
        break
    if rand is not None and rand.ok and worked is not None and not worked.ok:
        found.append("Your function assumes a batch dimension: it works on (2, 5, 16) tensors but fails on the "
                     "worked example's 2-D (3, 4) ones. Count dimensions from the end: `K.transpose(-2, -1)`, "
                     "`softmax(dim=-1)`, `Q.size(-1)`.")
    return found
