"""The stretch check of the causal mask: exact zeros above the diagonal, and PyTorch's output with the mask, on the
worked example (no batch) and on the batched random test; when they are wrong, why (`exercise.mask_diagnosis`)."""

from __future__ import annotations

import numpy as np

from core.reference import torch_scaled_dot_product_attention
from exercise.calls import dropout_diagnosis
from exercise.cases import ROW_SUM_ATOL, Case
from exercise.diagnosis import scaled_rows_message
from exercise.mask_diagnosis import (
    after_softmax_diagnosis,
    lengths_diagnosis,
    mask_diagnosis,
    padding_diagnosis,
    unassigned_output_diagnosis,
)
from exercise.measures import D_K_POWERS, normalised_axes, scale_after_softmax
from exercise.mistakes import same_values
from exercise.numbers import message_template, number
from exercise.results import CaseResult, RunResult, not_run
from exercise.second_value import second_value_diagnosis
from exercise.squash import squash_diagnosis
from exercise.uniform import UNIFORM_ATOL


def causal_check(run: RunResult, cases: tuple[Case, Case], ran: bool) -> tuple[bool, str, np.ndarray | None]:
    """The stretch: exact zeros above the diagonal and PyTorch's output with the mask, on the worked example
    (no batch) and on the batched random test. The weights returned are the worked example's, for the chart."""
    worked, batched = (_causal_case(run, case, ran) for case in cases)
    passed, message, worked_w = worked
    if not passed:
        return False, message, worked_w
    batched_passed, batched_message, _ = batched
    if not batched_passed:
        shape = "×".join(str(n) for n in np.shape(cases[1].Q))
        return False, f"On the worked example, yes; on the batched {shape} test with the causal mask, no. " \
                      f"{batched_message}", worked_w
    return True, message + " The same holds on the batched random test.", worked_w


@message_template
def zeroed_after_softmax_message(lowest: float, highest: float) -> str:
    """Weights zeroed above the diagonal after the softmax, so that the rows no longer sum to 1."""
    return (f"The weights above the diagonal are exactly 0, but the rows sum to {number(lowest)} … "
            f"{number(highest)}, not 1: the mask was applied after the softmax, zeroing weights. Mask the scores "
            "(with -inf) before the softmax instead.")


def _causal_error(run: RunResult, case: Case, res: CaseResult) -> str:
    """Why a masked case raised. For a function that needs a batch (the worked example showed it), the error on a
    batch of one; then what the function does with the mask, when the checker could tell."""
    assert case.mask is not None
    T = case.mask.shape[0]
    worked = run.cases.get("worked")
    on_batch = res.batched_error is not None and worked is not None and worked.batch_note is not None
    error = (res.batched_error if on_batch else res.error) or ""
    who = "it" if on_batch else "your function"
    msg = f"With the causal mask `torch.tril(torch.ones({T}, {T}))` {who} raised {error}"
    if on_batch:
        msg = ("Your function needs a batch dimension (see the worked example), so this check ran on a batch of one "
               "too (`Q.unsqueeze(0)`, the mask as it is). " + msg)
    if "positional argument" in error:
        msg += ". Add a fourth parameter, `mask=None`, as in the skeleton."
    explained = lengths_diagnosis(case, res) or padding_diagnosis(case, res, error)
    return msg if explained is None else f"{msg}. {explained}"


def _causal_case(run: RunResult, case: Case, ran: bool) -> tuple[bool, str, np.ndarray | None]:
    """(passed, message, weights) of the causal check on one masked case."""
    assert case.mask is not None
    res = run.cases.get(case.name)
    if not ran or res is None:
        return False, not_run(run), None
    T = case.mask.shape[0]
    if not res.ok:
        return False, _causal_error(run, case, res), None
    allowed = case.mask.astype(bool)
    expected = torch_scaled_dot_product_attention(case.Q, case.K, case.V, allowed)  # float32
    note = ""
    if res.mask_note:
        note = (f" (It needed a boolean mask: with the lesson's mask of 1.0s and 0.0s it raised "
                f"{res.mask_note}; `mask == 0` works for both.)")
    if res.kind != "pair" or res.weights is None:
        same = same_values(res.output, expected)
        unassigned = None if same else unassigned_output_diagnosis(run, case, res.output)
        return False, ("Return `(output, weights)` so that the zeros can be checked"
                       + (" (your masked output does match PyTorch's)." if same else ".")
                       + ("" if unassigned is None else " " + unassigned)), None
    w = res.weights
    want = np.shape(case.Q)[:-1] + (T,)
    if w.shape != want:
        return False, f"The masked weights have shape {w.shape}, expected {want}.", None
    above = w[..., ~allowed]
    if np.all(above == 0):
        if same_values(res.output, expected, rtol=1e-5, atol=1e-5):
            return True, ("Every weight above the diagonal is exactly 0, and the output matches "
                          "`F.scaled_dot_product_attention` with the same mask." + note), w
        sums = w.sum(axis=-1)
        if dropout_diagnosis(run, case, w) is not None:
            return False, ("The weights above the diagonal are exactly 0, as they should be, but your numbers change "
                           "from call to call (see the diagnosis)." + note), w
        spread = np.broadcast_to(allowed / allowed.sum(axis=-1, keepdims=True), w.shape)  # 1/(keys allowed)
        if same_values(w, spread, rtol=0, atol=UNIFORM_ATOL):
            return False, ("The weights above the diagonal are exactly 0, as they should be, but each query spreads its "
                           "weight equally over the keys it may see: its scores are all the same number (see the "
                           "diagnosis)." + note), w
        if -2 in normalised_axes(w, atol=ROW_SUM_ATOL):
            return False, ("The weights above the diagonal are exactly 0, but each column sums to 1 instead of "
                           "each row: the softmax ran over dim=-2, the queries (see the rows check)." + note), w
        p = scale_after_softmax(case, res.output, w)
        if p is not None:
            d_k = np.shape(case.Q)[-1]
            return False, ("The weights above the diagonal are exactly 0, as they should be. "
                           + scaled_rows_message(float(d_k**p), d_k, D_K_POWERS[p]) + note), w
        after = after_softmax_diagnosis(run, case, w)
        if after is not None:
            return False, after + note, w
        if np.all(np.isfinite(sums)) and np.max(np.abs(sums - 1)) > ROW_SUM_ATOL and np.all(w >= 0):
            return False, zeroed_after_softmax_message(sums.min(), sums.max()) + note, w
        return False, ("The weights above the diagonal are exactly 0, but the masked output differs from "
                       "PyTorch's: fix the unmasked checks first." + note), w
    returned = second_value_diagnosis(case, w) or squash_diagnosis(run, case, res.output, w)
    if returned is not None:
        return False, returned + note, w
    return False, mask_diagnosis(run, case, w) + note, w
