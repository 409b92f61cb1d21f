"""Which mistake the student made: found by measuring their numbers and by comparing them with the usual
wrong versions. Every diagnosis is plain text that names what to fix and the numbers that show it."""

from __future__ import annotations

import math

import numpy as np

from exercise.cases import Case
from exercise.measures import (
    added_mask_weights,
    masked_after_softmax,
    named_number,
    recovered_scale,
    sequence_first_attention,
)
from exercise.mistakes import match_mistake, mistaken_attention, same_values, softmax_over
from exercise.numbers import message_template, number
from exercise.results import CaseResult, RunResult


def mask_diagnosis(run: RunResult, case: Case, w: np.ndarray) -> str:
    """Why the weights of a masked case (unbatched ``(T, T)`` or batched ``(B, T, T)``) are not exactly zero
    above the diagonal."""
    assert case.mask is not None
    allowed = case.mask.astype(bool)  # (T, T), broadcast over a batch
    T = allowed.shape[0]
    unmasked = run.cases.get("worked" if w.ndim == 2 else "random")
    if unmasked is not None and same_values(w, unmasked.weights):
        return ("Your mask has no effect: the weights are the same as without it. Before the softmax, set the "
                "forbidden scores to -inf: `scores.masked_fill(mask == 0, float('-inf'))`.")
    above = w[..., ~allowed]
    visible_rows = [w[..., i, : i + 1] for i in range(T - 1)]  # every row but the last still sees a future key
    if all(np.all(np.abs(row) < 1e-6) for row in visible_rows) and np.any(np.nan_to_num(above) > 0):
        msg = ("Mask polarity reversed: the weights on and below the diagonal are 0 and those above it are "
               "not, so each token attends only to the future. The mask is 1 where attending is allowed: "
               "fill where `mask == 0`, not where `mask == 1`.")
        if np.isnan(w[..., T - 1, :]).any():
            msg += " (The last row has no key left at all, hence the NaN.)"
        return msg
    after = after_softmax_diagnosis(run, case, w)
    if after is not None:
        return after
    if same_values(w, added_mask_weights(case)):
        return added_mask_message(np.max(np.abs(above)))
    if np.all(np.isfinite(above)) and float(np.max(np.abs(above))) < 1e-6:
        return tiny_weights_message(np.max(np.abs(above)))
    Q, K = (np.asarray(a, dtype=np.float64) for a in (case.Q, case.K))
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])  # (..., T, d_k) @ (..., d_k, T) -> (..., T, T)
    if same_values(w, softmax_over(np.where(allowed, scores, 0.0), -1)):
        return ("You set the forbidden scores to 0, but e⁰ = 1, so future tokens still get weight. "
                "Fill them with `float('-inf')` instead.")
    return future_weights_message(np.max(np.abs(above)))


#: Where the mask belongs, said after every mask applied to the weights.
MASK_BEFORE_SOFTMAX = ("Apply the mask to the scores, before the softmax: "
                       "`scores = scores.masked_fill(mask == 0, float('-inf'))`, then "
                       "`weights = torch.softmax(scores, dim=-1)`, which turns every -inf score into a weight of "
                       "exactly 0 and leaves rows that sum to 1.")


def unmasked_weights(run: RunResult, case: Case, shape: tuple[int, ...]) -> np.ndarray:
    """The weights without the mask: the student's own on the same inputs if they have `shape`, else the right
    ones."""
    unmasked = run.cases.get("worked" if len(shape) == 2 else "random")
    if unmasked is not None and unmasked.weights is not None and unmasked.weights.shape == shape:
        return unmasked.weights
    return mistaken_attention(case.Q, case.K, case.V)[1]


def after_softmax_diagnosis(run: RunResult, case: Case, w: np.ndarray) -> str | None:
    """The mask applied to the weights after the softmax, in any of the orders `masked_after_softmax` computes;
    or, failing those, weights holding -inf or nan, which a softmax of masked scores never gives."""
    assert case.mask is not None
    allowed = case.mask.astype(bool)
    p = unmasked_weights(run, case, w.shape)
    with np.errstate(invalid="ignore"):
        sums = w.sum(axis=-1)
    forbidden = w[..., ~allowed]
    if same_values(w[..., allowed], p[..., allowed]) and not same_values(forbidden, p[..., ~allowed]):
        return masked_weights_message(np.min(forbidden), np.max(forbidden), np.min(sums), np.max(sums))
    if same_values(w, masked_after_softmax(p, allowed, -np.inf, "divide")):
        return ("The mask was applied after the softmax, with -inf, and each row then divided by its sum to make it "
                "sum to 1 again; but that sum is -inf, so the allowed weights became 0 and the masked ones nan "
                "(-inf / -inf). " + MASK_BEFORE_SOFTMAX)
    if same_values(w, masked_after_softmax(p, allowed, 0.0, "softmax")):
        return ("The mask was applied after the softmax, setting the masked weights to 0, and a second softmax then "
                "made the rows sum to 1 again; but e⁰ = 1, so the masked keys got weight back. " + MASK_BEFORE_SOFTMAX)
    if same_values(w, masked_after_softmax(p, allowed, -np.inf, "softmax")):
        return ("The mask was applied after the softmax, and a second softmax then made the rows sum to 1: the "
                "weights above the diagonal are 0, but the others are a softmax of weights, not of scores. One "
                "softmax is enough. " + MASK_BEFORE_SOFTMAX)
    if not np.all(np.isfinite(w)):
        return non_finite_message(float(np.sum(np.isneginf(w))), float(np.sum(np.isposinf(w))),
                                  float(np.sum(np.isnan(w))))
    return None


@message_template
def masked_weights_message(lowest: float, highest: float, lowest_sum: float, highest_sum: float) -> str:
    """The mask applied to the weights after the softmax: the masked weights set to a value between `lowest` and
    `highest` (0, -inf, nan, -1e9, ...), so that the rows sum to `lowest_sum` … `highest_sum`."""
    values = number(lowest) if number(lowest) == number(highest) else f"{number(lowest)} … {number(highest)}"
    sums = number(lowest_sum) if number(lowest_sum) == number(highest_sum) else (
        f"{number(lowest_sum)} … {number(highest_sum)}")
    return ("The mask was applied after the softmax: on and below the diagonal your weights are those of the "
            f"softmax without the mask, and above it they are {values}, so the rows no longer sum to 1 (they sum to "
            f"{sums}). "
            + MASK_BEFORE_SOFTMAX)


@message_template
def non_finite_message(neg_inf: float, pos_inf: float, nan: float) -> str:
    """Weights that hold -inf, inf or nan: counts of each."""
    held = " and ".join(f"{name} ({number(n)} of them)" for n, name in ((neg_inf, "-inf"), (pos_inf, "inf"),
                                                                          (nan, "nan")) if n != 0)
    return (f"Your weights hold {held or 'values that are not numbers'}, which a softmax never gives: it turns a -inf "
            "score into a weight of exactly 0. So the mask's -inf reached the weights after the softmax: the mask "
            "was applied after the softmax. " + MASK_BEFORE_SOFTMAX)


@message_template
def added_mask_message(largest: float) -> str:
    """The 0/1 mask added to the scores, as if it were a float bias."""
    return ("You added the mask to the scores (`scores + mask`), as PyTorch's documented reference does with a "
            "float mask: there a float mask is a bias, 0 where attending is allowed and -inf where it is not. "
            "The lesson's mask is 1 where a query may attend and 0 where it may not, so adding it only raises "
            f"the allowed scores by 1, and the future keep weights up to {number(largest)}. Turn the 0s into -inf: "
            "`scores.masked_fill(mask == 0, float('-inf'))`.")


@message_template
def tiny_weights_message(largest: float) -> str:
    """Forbidden weights close to 0 but not 0: a large negative fill instead of -inf."""
    return (f"Almost: the weights above the diagonal are tiny ({number(largest, 2)}) but not exactly 0. "
            "Fill with `float('-inf')`, whose exponential is exactly 0.")


@message_template
def future_weights_message(largest: float) -> str:
    """Forbidden weights that are not 0, for no reason the checker recognises."""
    return (f"The weights above the diagonal are not zero (the largest is {number(largest)}): "
            "tokens still attend to the future.")


def lengths_diagnosis(case: Case, res: CaseResult) -> str | None:
    """A function whose fourth argument is valid lengths, not a mask: given the lengths the case's mask stands for,
    it returns exactly the masked attention (the runner's ``as_lengths``)."""
    assert case.mask is not None
    probe = res.as_lengths
    expected_out, expected_w = mistaken_attention(case.Q, case.K, case.V, mask=case.mask)
    if probe is None or not same_values(probe.output, expected_out) or (
            probe.weights is not None and not same_values(probe.weights, expected_w)):
        return None
    T = case.mask.shape[0]
    lengths = [int(n) for n in case.mask.sum(axis=-1)]
    return (f"Your function reads its fourth argument as valid lengths, not as a mask: the number of keys each query "
            "may see, like `valid_lens` in the d2l.ai textbook's `masked_softmax`. So it read the lesson's "
            f"{T}×{T} mask of 1s and 0s as lengths, and failed. Given the lengths this mask stands for, {lengths} "
            "(`mask.sum(-1)`, one per query), it returns exactly the masked weights: your masking works, on lengths. "
            "The exercise passes the mask itself, 1 where a query may attend and 0 where it may not: take `mask` as "
            "the fourth parameter and fill the scores where `mask == 0` with -inf before the softmax: "
            "`scores.masked_fill(mask == 0, float('-inf'))`.")


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
                    or scale_diagnosis(by_name[name], res.output, weights))
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
