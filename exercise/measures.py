r"""What a student's numbers say about how they were computed: measured, not only matched against a list.

.. math:: \operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\left(f\, Q K^\top\right) V,
          \qquad f = 1/\sqrt{d_k}

* `recovered_scale`: the factor :math:`f` the student's scores were multiplied by, read off their
  weights (the log of a softmax row is :math:`f\,s_{ij}` up to a constant per row) or, with the output
  only, found by a search over :math:`\log f`;
* `normalised_axes`: the axes along which the weights sum to 1 (the softmax's ``dim``);
* `sequence_first_attention`: attention computed as if the first dimension were the sequence;
* `added_mask_weights`: the weights when a 0/1 mask is *added* to the scores, as PyTorch's documented
  reference does with a float mask;
* `masked_after_softmax`: the weights when the mask is applied to the weights, after the softmax, instead of
  to the scores, with or without a renormalisation afterwards;
* `causal_attention`: attention with the causal mask, to compare an unmasked case's output with;
* `transposed_products`: the output when the weights multiply V transposed or from the wrong side;
* `scale_after_softmax`: the power of d_k the weights were multiplied by after a softmax of unscaled scores,
  :math:`d_k^p \operatorname{softmax}(Q K^\top)`, so that every row sums to :math:`d_k^p`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from exercise.cases import Case
from exercise.mistakes import Mistake, mistaken_attention, same_values, softmax_over
from exercise.numbers import message_template, number


def raw_scores(case: Case) -> np.ndarray:
    """:math:`Q K^\\top` of a case, unscaled, float64: ``(..., T_q, T_k)``."""
    Q, K = (np.asarray(a, dtype=np.float64) for a in (case.Q, case.K))
    return Q @ np.swapaxes(K, -1, -2)  # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)


def attention_with_factor(case: Case, factor: float) -> tuple[np.ndarray, np.ndarray]:
    """``(softmax(factor · Q Kᵀ) V, weights)`` on an unmasked case."""
    weights = softmax_over(raw_scores(case) * factor, -1)
    return weights @ np.asarray(case.V, dtype=np.float64), weights  # (..., T_q, T_k) @ (..., T_k, d_v)


def _factor_from_weights(case: Case, weights: np.ndarray) -> float | None:
    """Least squares on each row: log w_ij − mean_j log w_ij = f (s_ij − mean_j s_ij)."""
    raw = raw_scores(case)
    if weights.shape != raw.shape or not np.all(np.isfinite(weights)) or np.any(weights <= 0):
        return None
    x = raw - raw.mean(axis=-1, keepdims=True)
    y = np.log(weights) - np.log(weights).mean(axis=-1, keepdims=True)
    denominator = float(np.sum(x * x))
    return float(np.sum(x * y)) / denominator if denominator > 0 else None


def _factor_from_output(case: Case, output: np.ndarray) -> float | None:
    """The factor whose output is closest to `output`: a grid over log f, then a golden-section refinement."""
    def error(log_f: float) -> float:
        out, _ = attention_with_factor(case, math.exp(log_f))
        return float(np.max(np.abs(out - output)))

    if output.shape != np.shape(case.V) or not np.all(np.isfinite(output)):
        return None
    return math.exp(grid_then_golden(error, np.linspace(-10.0, 10.0, 401), 60))


def grid_then_golden(error: Callable[[float], float], grid: np.ndarray, steps: int) -> float:
    """The x that minimises `error`: the best point of `grid`, then `steps` of golden-section search within one grid
    step either side of it."""
    best = float(grid[int(np.argmin([error(g) for g in grid]))])
    step = float(grid[1] - grid[0])
    lo, hi = best - step, best + step
    golden = (math.sqrt(5) - 1) / 2
    for _ in range(steps):
        a, b = hi - golden * (hi - lo), lo + golden * (hi - lo)
        lo, hi = (lo, b) if error(a) < error(b) else (a, hi)
    return (lo + hi) / 2


def recovered_scale(case: Case, output: np.ndarray | None, weights: np.ndarray | None) -> float | None:
    """The factor f with ``softmax(f · Q Kᵀ) V`` equal to the student's output (and weights), or None when no
    factor explains them (the mistake is elsewhere). `case` must be unmasked."""
    factor = _factor_from_weights(case, weights) if weights is not None else None
    if factor is None and output is not None:
        factor = _factor_from_output(case, output)
    if factor is None or not math.isfinite(factor):
        return None
    expected_out, expected_w = attention_with_factor(case, factor)
    if output is not None and not same_values(output, expected_out):
        return None
    if weights is not None and weights.shape == expected_w.shape and not same_values(weights, expected_w):
        return None
    return factor


@message_template
def named_number(x: float) -> str:
    """`x` to three significant digits, with ``= √n`` when it is the square root of a whole number."""
    text = number(x)
    if not math.isfinite(x * x):
        return text
    n = round(x * x)
    if 1 < n < 1e6 and abs(x * x - n) < 1e-3 * n and abs(x - round(x)) > 1e-3:
        text += f" (= √{n})"
    return text


def normalised_axes(weights: np.ndarray, atol: float = 1e-5) -> list[int]:
    """The axes (counted from the end, -1 first) along which `weights` sum to 1 everywhere."""
    return [axis for axis in range(-1, -weights.ndim - 1, -1)
            if np.allclose(weights.sum(axis=axis), 1.0, atol=atol)]


def sequence_first_attention(case: Case, mistake: Mistake = Mistake()) -> tuple[np.ndarray, np.ndarray]:
    """Attention (with `mistake`) on a ``(B, T, d)`` case read as ``(T, B, d)``: each of the T positions attends
    across the batch. Returns the output in the case's layout ``(B, T, d_v)`` and the weights ``(T, B, B)``."""
    Q, K, V = (np.swapaxes(np.asarray(a, dtype=np.float64), 0, 1) for a in (case.Q, case.K, case.V))  # (T, B, d)
    output, weights = mistaken_attention(Q, K, V, mistake)  # (T, B, B) @ (T, B, d_v) -> (T, B, d_v)
    return np.swapaxes(output, 0, 1), weights  # (T, B, d_v) -> (B, T, d_v)


def added_mask_weights(case: Case) -> np.ndarray:
    """``softmax(Q Kᵀ/√d_k + mask)``: the case's 0/1 mask added to the scores as a bias."""
    assert case.mask is not None
    scores = raw_scores(case) / math.sqrt(np.shape(case.Q)[-1])
    return softmax_over(scores + np.asarray(case.mask, dtype=np.float64), -1)


def masked_after_softmax(weights: np.ndarray, allowed: np.ndarray, fill: float, renormalise: str) -> np.ndarray:
    """`weights` (a softmax's, ``(..., T, T)``) with the forbidden ones set to `fill` after the softmax, then each
    row renormalised: ``"none"``, ``"divide"`` (by its sum, ``w / w.sum(-1)``) or ``"softmax"`` (a second one)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        masked = np.where(allowed, weights, fill)  # (T, T) broadcast over a batch
        if renormalise == "divide":
            return masked / masked.sum(axis=-1, keepdims=True)  # a sum of -inf: 0 where allowed, nan where not
        if renormalise == "softmax":
            return softmax_over(masked, -1)
        return masked


#: The powers of d_k a scale is written as, and how each is said: 1/d_k, 1/√d_k, √d_k, d_k.
D_K_POWERS = {-1.0: "1/d_k", -0.5: "1/√d_k", 0.5: "√d_k", 1.0: "d_k"}


def d_k_power(x: float, d_k: int, rtol: float = 1e-4) -> float | None:
    """The p in `D_K_POWERS` with ``x = d_k ** p``, or None."""
    return next((p for p in D_K_POWERS if math.isclose(x, d_k**p, rel_tol=rtol)), None)


def scale_after_softmax(case: Case, output: np.ndarray, weights: np.ndarray | None) -> float | None:
    """The power p of d_k when the student's output (and weights) are those of ``d_k**p · softmax(Q Kᵀ)``, the
    case's mask applied: the scale multiplied into the weights after a softmax of unscaled scores."""
    d_k = np.shape(case.Q)[-1]
    out, w = mistaken_attention(case.Q, case.K, case.V, Mistake(scale="none"), case.mask)
    for p in D_K_POWERS:
        if same_values(output, out * d_k**p) and (weights is None or same_values(weights, w * d_k**p)):
            return p
    return None


def causal_attention(case: Case, mistake: Mistake = Mistake()) -> tuple[np.ndarray, np.ndarray]:
    """``(output, weights)`` of the case's Q, K, V with the causal mask ``tril(ones(T, T))``, whatever its own (and
    with `mistake`)."""
    T = np.shape(case.Q)[-2]
    return mistaken_attention(case.Q, case.K, case.V, mistake, mask=np.tril(np.ones((T, T))))


def transposed_products(case: Case, mistake: Mistake = Mistake()) -> dict[str, np.ndarray]:
    """The outputs of the weights W of an unmasked case (right, or with `mistake`) multiplied by V the wrong way, by
    how it is written: ``W.transpose(-2, -1) @ V``, ``V @ W`` (square shapes only) and ``V.transpose(-2, -1) @ W``."""
    _, w = mistaken_attention(case.Q, case.K, case.V, mistake)
    V = np.asarray(case.V, dtype=np.float64)
    products = {"weights.transpose(-2, -1) @ V": np.swapaxes(w, -1, -2) @ V,  # (..., T_k, T_q) @ (..., T_k, d_v)
                "V.transpose(-2, -1) @ weights": np.swapaxes(V, -1, -2) @ w}  # (..., d_v, T) @ (..., T, T)
    if V.shape[-1] == w.shape[-2]:
        products["V @ weights"] = V @ w  # (..., T, d_v) @ (..., T, T): runs only when d_v == T
    return products
