r"""Masked (causal) self-attention: the decoder may not look ahead.

The mask is added to the scaled scores before the softmax:

.. math::

    \operatorname{MaskedAttention}(Q, K, V) = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}} + M\right) V,
    \qquad M_{ij} = \begin{cases} 0 & j \le i \\ -\infty & j > i \end{cases}

Since ``e^{-\infty} = 0``, every weight above the diagonal is exactly zero, and each row's
softmax is a softmax over the visible prefix ``0..i`` only. That is why a decoder can be
trained on a whole sentence at once (one masked matrix) and still behave exactly as it does
when generating one token at a time (where the later tokens do not exist yet).

Shapes: ``T`` tokens, embedding width ``d_model``, query/key width ``d_k``, value width ``d_v``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core._checks import as_float_array, positive_int
from core.attention import causal_mask, scaled_dot_product_attention
from core.embeddings import embed_tokens, random_projections
from core.positional import positional_encoding


@dataclass(frozen=True)
class MaskedAttention:
    """Every matrix of one pass of (optionally causal) self-attention; arrays are read-only.

    Shapes: Q, K ``(T, d_k)``; V ``(T, d_v)``; mask, scores, masked_scores,
    weights ``(T, T)``; output ``(T, d_v)``. ``mask[i, j]`` is True when query i
    may attend to key j; ``masked_scores`` holds ``-inf`` where it may not.
    """

    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    mask: np.ndarray
    scores: np.ndarray
    masked_scores: np.ndarray
    weights: np.ndarray
    output: np.ndarray


def additive_mask(mask: np.ndarray) -> np.ndarray:
    r"""The boolean mask as the matrix ``M`` added to the scores: 0 where allowed, ``-inf`` where masked.

    .. math:: M_{ij} = \begin{cases} 0 & \text{mask}_{ij} \\ -\infty & \text{otherwise} \end{cases}
    """
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise ValueError(f"mask must be boolean (True = may attend), got dtype {mask.dtype} with shape {mask.shape}.")
    return np.where(mask, 0.0, -np.inf)  # same shape as mask


def masked_self_attention(
    x: np.ndarray,
    W_q: np.ndarray,
    W_k: np.ndarray,
    W_v: np.ndarray,
    causal: bool = True,
) -> MaskedAttention:
    r"""Self-attention of the rows of `x`, with the causal mask when `causal` is True.

    .. math::

        Q = X W_q,\; K = X W_k,\; V = X W_v,\qquad
        A = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}} + M\right),\qquad \text{output} = A V

    Args:
        x: token inputs ``(T, d_model)`` (embeddings plus positional encoding).
        W_q, W_k: ``(d_model, d_k)`` projections; W_v: ``(d_model, d_v)``.
        causal: apply the causal mask (the decoder); False gives the encoder's
            unmasked self-attention (the mask is then all True).
    """
    x = as_float_array(x, "x", min_ndim=2)
    if x.ndim != 2:
        raise ValueError(f"x must be a (T, d_model) matrix, got shape {x.shape}.")
    mats = {name: as_float_array(w, name, min_ndim=2) for name, w in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v))}
    for name, w in mats.items():
        if w.ndim != 2 or w.shape[0] != x.shape[1]:
            raise ValueError(
                f"{name} must be a (d_model, d_out) matrix with d_model = {x.shape[1]} to multiply x {x.shape}, "
                f"got shape {w.shape}."
            )
    Q = x @ mats["W_q"]  # (T, d_model) @ (d_model, d_k) -> (T, d_k)
    K = x @ mats["W_k"]  # (T, d_model) @ (d_model, d_k) -> (T, d_k)
    V = x @ mats["W_v"]  # (T, d_model) @ (d_model, d_v) -> (T, d_v)
    if Q.shape[1] != K.shape[1]:
        raise ValueError(f"W_q and W_k must give the same width d_k, got {Q.shape[1]} and {K.shape[1]}.")
    t = x.shape[0]
    mask = causal_mask(t) if causal else np.ones((t, t), dtype=bool)  # (T, T)
    output, weights = scaled_dot_product_attention(Q, K, V, mask=mask)  # (T, d_v), (T, T)
    scores = Q @ K.T / np.sqrt(Q.shape[1])  # (T, d_k) @ (d_k, T) -> (T, T)
    masked_scores = scores + additive_mask(mask)  # (T, T), -inf where masked
    arrays = dict(Q=Q, K=K, V=V, mask=mask, scores=scores, masked_scores=masked_scores, weights=weights,
                  output=output)
    for a in arrays.values():
        a.setflags(write=False)
    return MaskedAttention(**arrays)


def sentence_self_attention(tokens: Sequence[str], d_model: int, seed: int = 0, *,
                            causal: bool = True) -> MaskedAttention:
    """One head of self-attention over a sentence: random token embeddings plus positional encodings,
    random ``(d_model, d_model)`` projections W_q, W_k, W_v (so d_k = d_model), with or without the causal mask."""
    X = embed_tokens(tokens, d_model, seed) + positional_encoding(len(tokens), d_model)  # (T, d_model)
    W_q, W_k, W_v = random_projections(d_model, seed, n=3)
    return masked_self_attention(X, W_q, W_k, W_v, causal=causal)


def max_above_diagonal(weights: np.ndarray) -> float:
    r"""Largest attention weight strictly above the diagonal: what a token gives to its future.

    .. math:: \max_{j > i} A_{ij}

    Exactly 0.0 under the causal mask. A ``1 x 1`` matrix has nothing above the
    diagonal and also gives 0.0 (no weight can leak to a future that has no tokens).
    """
    w = as_float_array(weights, "weights", min_ndim=2)
    if w.ndim != 2 or w.shape[0] != w.shape[1]:
        raise ValueError(f"weights must be a square (T, T) matrix, got shape {w.shape}.")
    upper = w[np.triu_indices(w.shape[0], k=1)]  # (T (T - 1) / 2,)
    return float(upper.max()) if upper.size else 0.0


def future_weight(weights: np.ndarray) -> float:
    r"""Total attention weight that all tokens together give to later tokens.

    .. math:: \sum_i \sum_{j > i} A_{ij}

    Exactly 0.0 under the causal mask; without it, this is how much of the
    output would be built from words a generating decoder has not written yet.
    """
    w = as_float_array(weights, "weights", min_ndim=2)
    if w.ndim != 2 or w.shape[0] != w.shape[1]:
        raise ValueError(f"weights must be a square (T, T) matrix, got shape {w.shape}.")
    return float(w[np.triu_indices(w.shape[0], k=1)].sum())


def _step_index(step: int, t: int) -> int:
    step = positive_int(step, "step")
    if step > t:
        raise ValueError(f"step must be between 1 and T = {t}, got {step}.")
    return step - 1


def prefix_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, step: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Generation step `step` (1-based): token ``t = step`` attends over the tokens that exist so far.

    .. math::

        a = \operatorname{softmax}\!\left(\frac{q_t K_{\le t}^\top}{\sqrt{d_k}}\right),\qquad
        \text{output}_t = a\, V_{\le t}

    No mask is used: the future keys are simply not there yet. The result equals
    row ``t`` of the causally masked attention, which is the point of the mask.

    Args:
        q: all queries ``(T, d_k)``; only row ``t - 1`` (0-based) is used.
        k, v: all keys ``(T, d_k)`` and values ``(T, d_v)``; only rows ``0..t-1`` are used.
        step: 1-based generation step ``t``.

    Returns:
        The weights over the visible prefix ``(t,)`` and the output ``(d_v,)``.
    """
    q = as_float_array(q, "q", min_ndim=2)
    k = as_float_array(k, "k", min_ndim=2)
    v = as_float_array(v, "v", min_ndim=2)
    if q.ndim != 2 or k.shape[0] != q.shape[0] or v.shape[0] != q.shape[0]:
        raise ValueError(f"q, k, v must be (T, d) matrices with the same T, got {q.shape}, {k.shape}, {v.shape}.")
    i = _step_index(step, q.shape[0])
    out, w = scaled_dot_product_attention(q[i : i + 1], k[: i + 1], v[: i + 1])  # (1, d_v), (1, t)
    return w[0], out[0]


def renormalise_visible(weights_row: np.ndarray, step: int) -> np.ndarray:
    r"""Drop the future from an unmasked weight row and rescale what is left to sum to 1.

    .. math:: \tilde a_j = \frac{a_j}{\sum_{j' \le t} a_{j'}}\ (j \le t),\qquad \tilde a_j = 0\ (j > t)

    Applied to row ``t`` of the *unmasked* weights this gives row ``t`` of the
    *masked* weights: masking removes the future keys' share and renormalises.
    Returns a ``(T,)`` row.
    """
    a = as_float_array(weights_row, "weights_row", min_ndim=1)
    if a.ndim != 1:
        raise ValueError(f"weights_row must be 1-D, got shape {a.shape}.")
    i = _step_index(step, a.shape[0])
    out = np.zeros_like(a)  # (T,)
    visible = a[: i + 1]  # (t,)
    total = visible.sum()
    if not total > 0:
        raise ValueError(f"the visible weights of the row (shape {a.shape}) sum to {total}; nothing to renormalise.")
    out[: i + 1] = visible / total
    return out
