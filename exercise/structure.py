"""Mistakes in the structure of the computation, measured on a student's numbers: the weights multiplying V the
wrong way round, the first dimension read as the sequence, the future masked whatever the mask. Each takes the
`Mistake` made besides it (none by default), so that two mistakes at once can be named (`exercise.pairs`)."""

from __future__ import annotations

import numpy as np

from exercise.cases import Case
from exercise.measures import causal_attention, sequence_first_attention, transposed_products
from exercise.mistakes import Mistake, mistaken_attention, same_values
from exercise.results import RunResult


def always_causal_diagnosis(run: RunResult, case: Case, output: np.ndarray, weights: np.ndarray | None,
                            mistake: Mistake = Mistake()) -> str | None:
    """An output without a mask that equals the causally masked one: a function that masks the future whatever its
    `mask` argument, as ``F.scaled_dot_product_attention(..., is_causal=True)`` does."""
    out, w = causal_attention(case, mistake)
    if not same_values(output, out) or (weights is not None and not same_values(weights, w)):
        return None
    said = ("Called without a mask, your function still masks the future: its output is exactly that of causal "
            "attention, `tril(ones(T, T))`, so the unmasked output is wrong and the `mask` argument is ignored.")
    if run.used_builtin:
        causal = run.reading.is_causal
        where = f" on {causal[0].shown()}" if len(causal) == 1 else ""
        return (said + " `is_causal=True` makes `F.scaled_dot_product_attention` mask the future whether or not a "
                f"mask is given: drop it{where}, and pass the mask you are given, when there is one, as "
                "`attn_mask=mask.bool()`.")
    return said + " Apply the mask your function is given, and none when it is None."


def transposed_diagnosis(case: Case, output: np.ndarray, weights: np.ndarray | None,
                         mistake: Mistake = Mistake()) -> str | None:
    """An output that is the right weights (or those of `mistake`) multiplied by V the wrong way
    (`transposed_products`), the weights themselves being those when returned."""
    if weights is not None and not same_values(weights, mistaken_attention(case.Q, case.K, case.V, mistake)[1]):
        return None
    written = next((how for how, product in transposed_products(case, mistake).items()
                    if same_values(output, product)), None)
    if written is None:
        return None
    return (f"Your output is `{written}`: the weights multiply V the wrong way round. Each query's output is its "
            "row of weights times V, the weights on the left and as they are: `output = weights @ V`, "
            "`(..., T, T) @ (..., T, d_v) -> (..., T, d_v)`.")


def sequence_first_diagnosis(case: Case, output: np.ndarray, weights: np.ndarray | None,
                             mistake: Mistake = Mistake()) -> str | None:
    """Attention (with `mistake`) computed over the first dimension, as if the tensors were
    ``(seq_len, batch, d_k)``."""
    if np.ndim(case.Q) != 3:
        return None
    expected_out, _ = sequence_first_attention(case, mistake)
    if not same_values(output, expected_out):
        return None
    B, T, d_k = np.shape(case.Q)
    shape = "" if weights is None else f" (your weights have shape {tuple(weights.shape)}: {B} × {B} maps)"
    return (f"Your function reads the first dimension as the sequence: on Q of shape ({B}, {T}, {d_k}) each of the "
            f"{T} positions attends across the {B} items of the batch{shape}. That is the (seq_len, batch, d_k) "
            "layout of nn.MultiheadAttention without batch_first=True; the exercise's tensors are "
            "(batch, seq_len, d_k), so a query attends over dim -2: `Q @ K.transpose(-2, -1)` with no transpose "
            "of the first two dimensions.")
