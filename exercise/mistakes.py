r"""The usual ways of getting attention wrong, computed, so that a student's numbers can be matched to one.

.. math:: \operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V

Each `Mistake` swaps one step of the formula (the scale, the scores, the softmax's axis, what is
returned) for a classic wrong version; `mistaken_attention` computes it in float64 and
`match_mistake` finds the simplest one that gives exactly a student's output.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from itertools import product

import numpy as np
import torch

from exercise.cases import Case

_MISTAKE_TEXT: dict[tuple[str, str], str] = {
    ("scale", "none"): "No scaling: the scores are never divided by √d_k. Divide `Q @ Kᵀ` by `d_k ** 0.5`.",
    ("scale", "d_k"): "Scaled by d_k instead of √d_k: you divide by d_k = 16 where the formula divides by "
                      "√16 = 4. Use `d_k ** 0.5` (or `math.sqrt(d_k)`).",
    ("scale", "times"): "Multiplied by √d_k instead of dividing: the scores must get *smaller*, `/ d_k ** 0.5`.",
    ("scale", "sqrt_T"): "d_k taken from the wrong dimension: you divide by √seq_len (√5) instead of √d_k "
                         "(√16). d_k is the last dimension: `Q.size(-1)`.",
    ("scores", "QK"): "K not transposed: `Q @ K` multiplies the wrong dimensions. Use "
                      "`Q @ K.transpose(-2, -1)`.",
    ("scores", "K_batch"): "K transposed over the batch dimension: `K.transpose(0, 1)` swaps batch and "
                           "sequence. Transpose the last two dimensions: `K.transpose(-2, -1)`.",
    ("scores", "K_all"): "`K.T` on a 3-D tensor reverses all three dimensions (batch included). Use "
                         "`K.transpose(-2, -1)` (or `K.mT`).",
    ("scores", "KQ"): "Queries and keys swapped: `K @ Qᵀ` is the transpose of the score matrix, so each row "
                      "now belongs to a key. Use `Q @ K.transpose(-2, -1)`.",
    ("softmax", "queries"): "Softmax over the wrong dimension: `dim=-2` (`dim=1` on these 3-D tensors) "
                            "normalises each column, over the queries. Use `dim=-1`, so that each query's row "
                            "sums to 1.",
    ("softmax", "batch"): "Softmax over the batch dimension: `dim=0` (also what `F.softmax` picks on a 3-D "
                          "tensor when `dim` is left out) mixes different sequences. Use `dim=-1`.",
    ("softmax", "none"): "No softmax: the scores go straight into the weighted sum, so the weights are not "
                         "a probability distribution. Apply `torch.softmax(scores, dim=-1)`.",
    ("returns", "scores"): "Returned the scores instead of the weighted values: the output is "
                           "`weights @ V`, one d_v-vector per query.",
    ("returns", "weights"): "Returned the attention weights instead of the output: multiply them by V: "
                            "`output = weights @ V`.",
}


@dataclass(frozen=True)
class Mistake:
    """A known way of getting attention wrong; ``Mistake()`` (all defaults) is the correct formula.

    Attributes:
        scale: ``"sqrt_d_k"`` (correct), ``"none"``, ``"d_k"``, ``"times"`` (× √d_k), ``"sqrt_T"``.
        scores: ``"QKt"`` (correct ``Q Kᵀ``), ``"QK"`` (K not transposed), ``"K_batch"``
            (``K.transpose(0, 1)``), ``"K_all"`` (``K.T``: all dimensions reversed), ``"KQ"`` (``K Qᵀ``).
        softmax: ``"last"`` (correct, ``dim=-1``), ``"queries"`` (``dim=-2``), ``"batch"`` (``dim=0``),
            ``"none"``.
        returns: ``"output"`` (correct, ``A V``), ``"scores"``, ``"weights"``.
    """

    scale: str = "sqrt_d_k"
    scores: str = "QKt"
    softmax: str = "last"
    returns: str = "output"

    def wrong_parts(self) -> list[tuple[str, str]]:
        """The ``(part, value)`` pairs that differ from the correct formula."""
        correct = Mistake()
        return [(p, getattr(self, p)) for p in ("scale", "scores", "softmax", "returns")
                if getattr(self, p) != getattr(correct, p)]

    def describe(self) -> list[str]:
        """One sentence per wrong part, in the order the computation runs."""
        return [_MISTAKE_TEXT[part] for part in self.wrong_parts()]


MISTAKE_OPTIONS: dict[str, tuple[str, ...]] = {
    "scale": ("sqrt_d_k", "none", "d_k", "times", "sqrt_T"),
    "scores": ("QKt", "QK", "K_batch", "K_all", "KQ"),
    "softmax": ("last", "queries", "batch", "none"),
    "returns": ("output", "scores", "weights"),
}


def all_mistakes() -> list[Mistake]:
    """Every combination of known mistakes, fewest mistakes first (the correct formula excluded).

    Combinations that compute the same thing are listed once (returning the scores makes the
    softmax irrelevant; skipping the softmax and returning the weights is returning the scores).
    """
    found = []
    for combo in product(*MISTAKE_OPTIONS.values()):
        m = Mistake(*combo)
        if m.returns == "scores" and m.softmax != "last":
            continue
        if m.returns == "weights" and m.softmax == "none":
            continue
        if m.wrong_parts():
            found.append(m)
    return sorted(found, key=lambda m: len(m.wrong_parts()))


def softmax_over(x: np.ndarray, axis: int) -> np.ndarray:
    """Softmax as PyTorch computes it: a row of only ``-inf`` gives NaN instead of raising."""
    with np.errstate(invalid="ignore", over="ignore"):
        m = np.max(x, axis=axis, keepdims=True)
        e = np.exp(x - np.where(np.isfinite(m), m, 0.0))
        return e / e.sum(axis=axis, keepdims=True)


def mistaken_attention(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray, mistake: Mistake = Mistake(), mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    r"""Attention computed with `mistake` (float64). ``Mistake()`` gives the correct
    ``(softmax(Q Kᵀ/√d_k) V, weights)``; a mask (1 = may attend) fills forbidden scores with ``-inf``.

    Raises `ValueError` when the mistaken shapes cannot be multiplied (as PyTorch would raise).
    """
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    d_k, T = Q.shape[-1], Q.shape[-2]
    if mistake.scores == "QKt":
        scores = Q @ np.swapaxes(K, -1, -2)  # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)
    elif mistake.scores == "QK":
        scores = Q @ K  # (..., T, d_k) @ (..., T, d_k): only runs when T == d_k
    elif mistake.scores == "K_batch":
        scores = Q @ np.swapaxes(K, 0, 1)  # K.transpose(0, 1): (B, T, d_k) -> (T, B, d_k)
    elif mistake.scores == "K_all":
        scores = Q @ K.transpose()  # K.T: (B, T, d_k) -> (d_k, T, B)
    elif mistake.scores == "KQ":
        scores = K @ np.swapaxes(Q, -1, -2)  # (..., T_k, d_k) @ (..., d_k, T_q) -> (..., T_k, T_q)
    else:
        raise ValueError(f"unknown scores variant {mistake.scores!r}")
    factor = {"sqrt_d_k": 1 / math.sqrt(d_k), "none": 1.0, "d_k": 1 / d_k, "times": math.sqrt(d_k),
              "sqrt_T": 1 / math.sqrt(T)}[mistake.scale]
    scores = scores * factor
    if mask is not None:
        scores = np.where(np.asarray(mask) == 0, -np.inf, scores)  # (T_q, T_k) broadcast over the batch
    if mistake.returns == "scores":
        return scores, scores
    axis = {"last": -1, "queries": -2, "batch": 0}.get(mistake.softmax)
    weights = scores if axis is None else softmax_over(scores, axis)
    if mistake.returns == "weights":
        return weights, weights
    return weights @ V, weights  # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)


def mistake_function(mistake: Mistake) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
    """A PyTorch-facing function that makes `mistake`, with the student's signature (for demos and tests)."""

    def attention(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, mask: torch.Tensor | None = None):
        arrays = [t.detach().numpy() for t in (Q, K, V)]
        out, weights = mistaken_attention(*arrays, mistake, None if mask is None else mask.numpy())
        return torch.from_numpy(out).float(), torch.from_numpy(weights).float()

    return attention


def same_values(a: np.ndarray | None, b: np.ndarray | None, rtol: float = 1e-4, atol: float = 1e-5) -> bool:
    return (a is not None and b is not None and a.shape == b.shape
            and bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)))


def match_mistake(case: Case, output: np.ndarray) -> Mistake | None:
    """The simplest known mistake whose output on `case` equals `output` (None if none does)."""
    for m in all_mistakes():
        try:
            out, _ = mistaken_attention(case.Q, case.K, case.V, m, case.mask)
        except ValueError:
            continue
        if same_values(output, out):
            return m
    return None
