"""Why a masked case's weights are wrong: found by measuring them against the ways a mask is usually misapplied
(no effect, reversed, added, applied after the softmax, filled with 0 or a large negative number, read as
lengths). Every diagnosis is plain text that names what to fix and the numbers that show it."""

from __future__ import annotations

import math

import numpy as np

from exercise.cases import Case
from exercise.measures import added_mask_weights, masked_after_softmax
from exercise.mistakes import mistaken_attention, same_values, softmax_over
from exercise.numbers import message_template, number
from exercise.results import CaseResult, RunResult, SourceLine, error_line


def mask_diagnosis(run: RunResult, case: Case, w: np.ndarray) -> str:
    """Why the weights of a masked case (unbatched ``(T, T)`` or batched ``(B, T, T)``) are not exactly zero
    above the diagonal."""
    assert case.mask is not None
    allowed = case.mask.astype(bool)  # (T, T), broadcast over a batch
    T = allowed.shape[0]
    unmasked = run.cases.get("worked" if w.ndim == 2 else "random")
    if unmasked is not None and same_values(w, unmasked.weights):
        if run.reading.unassigned:
            return unassigned_fill_message(run.reading.unassigned[0])
        unread = next((line for line in run.reading.unread if line.value == 3.0), None)
        never = "" if unread is None else f" (your function never reads `{unread.name}`, its fourth parameter)"
        return (f"Your mask has no effect{never}: the weights are the same as without it. Before the softmax, set the "
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


def unassigned_fill_message(line: SourceLine, what: str = "weights") -> str:
    """A mask with no effect on the `what` (weights, output), and a ``masked_fill`` whose result the student's code
    throws away on `line`."""
    tensor = line.tensor or "scores"
    fix = f"{tensor} = {line.call}" if line.call else f"{tensor} = {tensor}.masked_fill(…)"
    return (f"Your mask has no effect: the {what} are the same as without it, because `masked_fill` returns a new "
            f"tensor; assign it: `{fix}` on line {line.number}, which throws the result away and leaves `{tensor}` as "
            "it was. (`masked_fill_`, with the underscore, is the one that fills in place.)")


def unassigned_output_diagnosis(run: RunResult, case: Case, output: np.ndarray | None) -> str | None:
    """For a function that returns only the output: a masked output equal to the unmasked one, and a ``masked_fill``
    whose result the source throws away."""
    unmasked = run.cases.get("worked" if np.ndim(case.Q) == 2 else "random")
    if not run.reading.unassigned or unmasked is None or not same_values(output, unmasked.output):
        return None
    return unassigned_fill_message(run.reading.unassigned[0], "outputs")


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


def padding_diagnosis(case: Case, res: CaseResult, error: str) -> str | None:
    """A function that reads its fourth argument as a key-padding mask, one value per key: given a ``(batch, T)``
    mask that pads the last key (the runner's ``as_padding``), it returns attention without that key (or, reading
    1 as padding, with that key alone)."""
    assert case.mask is not None
    probe = res.as_padding
    if probe is None:
        return None
    T = case.mask.shape[0]
    batch = np.shape(case.Q)[0] if np.ndim(case.Q) == 3 else 1
    last = np.arange(T) == T - 1  # (T,): the padded key
    polarity = None
    for ones_mean, allowed in (("a real token", ~last), ("padding", last)):
        out, w = mistaken_attention(case.Q, case.K, case.V, mask=np.broadcast_to(allowed, (T, T)))
        if same_values(probe.output, out) and (probe.weights is None or same_values(probe.weights, w)):
            polarity = ones_mean
    if polarity is None:
        return None
    line = error_line(error)
    where = "" if line is None else f" on line {line}"
    reversed_ones = "" if polarity == "a real token" else (
        " It also reads 1 as padding, like nn.MultiheadAttention's `key_padding_mask`, where the lesson's 1 means "
        "may attend.")
    return (f"Your function reads its fourth argument as a key-padding mask: one value per key, of shape "
            f"(batch, seq_len) = ({batch}, {T}), like BERT's `attention_mask`. The lesson's mask has one value per "
            f"(query, key) pair, of shape (seq_len, seq_len) = ({T}, {T}): row i says which keys query i may see; "
            f"read as one row per sequence, it made your code fail{where}. Given a ({batch}, {T}) mask that "
            f"marks the last key as padding, it returns exactly attention without that key: your masking works, "
            f"on padding.{reversed_ones} Use the ({T}, {T}) mask as it is, which broadcasts over the batch: "
            "`scores.masked_fill(mask == 0, float('-inf'))`.")


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
