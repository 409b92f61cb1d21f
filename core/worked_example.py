"""The lesson's three-token worked example, every intermediate matrix kept.

With ``seed=0`` this reproduces the lesson's printed numbers exactly: the
embeddings X are fixed, and W_q, W_k, W_v are drawn in that order from
``np.random.default_rng(seed)`` as standard normals rounded to one decimal.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core._checks import as_float_array
from core.attention import softmax

LESSON_TOKENS: tuple[str, ...] = ("the", "cat", "sat")
LESSON_X: np.ndarray = np.array(
    [
        [1.0, 0.0, 1.0, 0.0],  # "the"
        [0.0, 1.0, 0.0, 1.0],  # "cat"
        [1.0, 1.0, 0.0, 0.0],  # "sat"
    ]
)
LESSON_X.setflags(write=False)


@dataclass(frozen=True)
class WorkedExample:
    """Every matrix of one pass of single-head self-attention (arrays are read-only).

    Shapes, for T tokens and embedding width d:
    X ``(T, d)``; W_q, W_k, W_v ``(d, d)``; Q, K, V ``(T, d)``;
    raw_scores, scaled_scores, weights ``(T, T)``; output ``(T, d)``.
    """

    tokens: tuple[str, ...]
    X: np.ndarray
    W_q: np.ndarray
    W_k: np.ndarray
    W_v: np.ndarray
    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    raw_scores: np.ndarray
    scaled_scores: np.ndarray
    weights: np.ndarray
    output: np.ndarray

    @property
    def d_k(self) -> int:
        """Width of the keys, the d_k in 1/sqrt(d_k)."""
        return int(self.K.shape[-1])


def lesson_weight_matrices(seed: int, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """W_q, W_k, W_v ``(d, d)`` by the lesson's recipe: rounded standard normals, in that order."""
    rng = np.random.default_rng(seed)
    return tuple(np.round(rng.normal(0, 1, size=(d, d)), 1) for _ in range(3))  # type: ignore[return-value]


def worked_example(
    seed: int = 0,
    *,
    X: np.ndarray | None = None,
    tokens: tuple[str, ...] | None = None,
) -> WorkedExample:
    r"""Run the lesson's worked example and keep every intermediate matrix.

    .. math::

        Q = X W_q,\; K = X W_k,\; V = X W_v,\quad
        A = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right),\quad
        \text{output} = A V

    Args:
        seed: seeds the weight matrices; 0 gives the lesson's numbers.
        X: optional ``(T, d)`` embeddings replacing the lesson's 3 x 4 matrix.
        tokens: optional labels, one per row of X.
    """
    X = LESSON_X if X is None else as_float_array(X, "X", min_ndim=2)
    if X.ndim != 2:
        raise ValueError(f"X must be a (tokens, d_model) matrix, got shape {X.shape}.")
    tokens = LESSON_TOKENS if tokens is None else tuple(str(t) for t in tokens)
    if len(tokens) != X.shape[0]:
        raise ValueError(f"{len(tokens)} token labels for X of shape {X.shape}: need one label per row.")

    return example_from_weights(tokens, X, *lesson_weight_matrices(seed, X.shape[1]))


def example_from_weights(tokens: tuple[str, ...], X: np.ndarray, W_q: np.ndarray, W_k: np.ndarray,
                         W_v: np.ndarray) -> WorkedExample:
    r"""One head of self-attention on `X` ``(T, d)`` with the given ``(d, d)`` weights, every matrix kept.

    .. math:: A = \operatorname{softmax}\!\left(\frac{(X W_q)(X W_k)^\top}{\sqrt{d_k}}\right),\quad
              \text{output} = A\, X W_v
    """
    Q = X @ W_q  # (T, d) @ (d, d) -> (T, d)
    K = X @ W_k  # (T, d)
    V = X @ W_v  # (T, d)
    raw_scores = Q @ K.T  # (T, d) @ (d, T) -> (T, T)
    scaled_scores = raw_scores / np.sqrt(K.shape[-1])  # (T, T)
    weights = softmax(scaled_scores, axis=-1)  # (T, T), rows sum to 1
    output = weights @ V  # (T, T) @ (T, d) -> (T, d)

    arrays = dict(X=X, W_q=W_q, W_k=W_k, W_v=W_v, Q=Q, K=K, V=V, raw_scores=raw_scores,
                  scaled_scores=scaled_scores, weights=weights, output=output)
    for a in arrays.values():
        a.setflags(write=False)
    return WorkedExample(tokens=tokens, **arrays)
