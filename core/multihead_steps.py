r"""Multi-head attention, step by step: every intermediate matrix, and a PyTorch reference.

.. math::

    Q = X W_q,\quad K = X W_k,\quad V = X W_v \qquad (T \times d_{model})

    \text{head}_h = \operatorname{softmax}\!\left(\frac{Q_h K_h^\top}{\sqrt{d_k}}\right) V_h,
    \qquad Q_h = Q[:,\ h d_k : (h+1) d_k],\quad d_k = d_{model} / H

    \operatorname{MultiHead}(X) = \operatorname{Concat}(\text{head}_1, \dots, \text{head}_H)\, W_o

`core.multihead.multi_head_attention` computes the result in one go; `multi_head_steps`
keeps the pieces (the per-head slices, the per-head outputs, their concatenation) so
they can be looked at, and `torch_multihead_attention` runs the same weights through
``torch.nn.MultiheadAttention`` for a live cross-check.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn

from core._checks import as_float_array, positive_int
from core.attention import scaled_dot_product_attention
from core.multihead import checked_projections, every_heads_mask, merge_heads, split_heads


def divisors(n: int) -> list[int]:
    """All positive divisors of `n`, ascending: the head counts that split ``d_model = n`` evenly.

    ``divisors(12) -> [1, 2, 3, 4, 6, 12]``.
    """
    n = positive_int(n, "n")
    return [h for h in range(1, n + 1) if n % h == 0]


def nearest_divisor(n: int, target: int) -> int:
    """The divisor of `n` closest to `target` (the smaller one on a tie).

    Used when ``d_model`` changes and the old number of heads no longer divides it:
    ``nearest_divisor(6, 4) -> 3``.
    """
    return min(divisors(n), key=lambda h: (abs(h - target), h))


def head_of_column(d_model: int, n_heads: int) -> np.ndarray:
    """For each of the `d_model` columns of Q, K or V, the (0-based) head that reads it.

    Head ``h`` owns columns ``h * d_k`` to ``(h + 1) * d_k - 1``: ``head_of_column(6, 3) -> [0, 0, 1, 1, 2, 2]``.
    """
    d_model = positive_int(d_model, "d_model")
    n_heads = positive_int(n_heads, "n_heads")
    if d_model % n_heads:
        raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}; choose one of {divisors(d_model)}.")
    return np.arange(d_model) // (d_model // n_heads)  # (d_model,)


@dataclass(frozen=True)
class MultiHeadSteps:
    """Every intermediate of one multi-head self-attention pass over ``X`` of shape ``(T, d_model)``."""

    n_heads: int
    d_k: int
    q: np.ndarray  # (T, d_model) = X W_q
    k: np.ndarray  # (T, d_model) = X W_k
    v: np.ndarray  # (T, d_model) = X W_v
    q_heads: np.ndarray  # (H, T, d_k): head h's slice of Q
    k_heads: np.ndarray  # (H, T, d_k)
    v_heads: np.ndarray  # (H, T, d_k)
    scores: np.ndarray  # (H, T, T) = Q_h K_hᵀ / √d_k, each head's softmax input
    weights: np.ndarray  # (H, T, T): one attention map per head
    head_outputs: np.ndarray  # (H, T, d_k): head_h = A_h V_h
    concat: np.ndarray  # (T, d_model) = Concat(head_1, ..., head_H)
    output: np.ndarray  # (T, d_model) = concat W_o


def multi_head_steps(
    x: np.ndarray,
    w_q: np.ndarray,
    w_k: np.ndarray,
    w_v: np.ndarray,
    w_o: np.ndarray,
    n_heads: int,
    mask: np.ndarray | None = None,
) -> MultiHeadSteps:
    r"""Multi-head self-attention over ``x`` ``(T, d_model)``, keeping every intermediate.

    `mask` (optional, boolean ``(T, T)``, True = may attend) is every head's; the scores keep their
    unmasked values, the weights of a masked key are exactly 0.

    ``output`` and ``weights`` are those of `core.multihead.multi_head_attention`, computed the same way, and
    ``concat @ w_o == output``.

    Raises:
        ValueError: if ``x`` is not 2-D, ``n_heads`` does not divide ``d_model`` or a
            weight matrix is not ``(d_model, d_model)``.
    """
    x = as_float_array(x, "x", min_ndim=2)
    if x.ndim != 2:
        raise ValueError(f"x must be one sequence of shape (T, d_model), got shape {x.shape}.")
    n_heads = positive_int(n_heads, "n_heads")
    w_q, w_k, w_v, w_o = checked_projections(x, w_q, w_k, w_v, w_o, n_heads)
    d_k = x.shape[1] // n_heads
    q, k, v = x @ w_q, x @ w_k, x @ w_v  # each (T, d_model) @ (d_model, d_model) -> (T, d_model)
    q_heads, k_heads, v_heads = (split_heads(m, n_heads) for m in (q, k, v))  # each (H, T, d_k)
    scores = q_heads @ np.swapaxes(k_heads, -1, -2) / np.sqrt(d_k)  # (H, T, d_k) @ (H, d_k, T) -> (H, T, T)
    head_outputs, weights = scaled_dot_product_attention(q_heads, k_heads, v_heads,
                                                         mask=every_heads_mask(mask))  # (H, T, d_k), (H, T, T)
    concat = merge_heads(head_outputs)  # (H, T, d_k) -> (T, d_model)
    output = concat @ w_o  # (T, d_model) @ (d_model, d_model) -> (T, d_model)
    return MultiHeadSteps(
        n_heads=int(n_heads), d_k=d_k, q=q, k=k, v=v, q_heads=q_heads, k_heads=k_heads, v_heads=v_heads,
        scores=scores, weights=weights, head_outputs=head_outputs, concat=concat, output=output,
    )


@dataclass(frozen=True)
class HeadFocus:
    """How sharply each head attends: the mean over queries of a row's largest weight, per head."""

    peak: np.ndarray  # (H,): 1/T for uniform rows, 1 for one-hot rows
    sharpest: int  # the head with the largest peak (0-based)
    flattest: int  # the head with the smallest peak
    spread: float  # largest difference between two heads' weights for the same (query, key)


def head_focus(weights: np.ndarray) -> HeadFocus:
    """`HeadFocus` of per-head attention maps ``(H, T, T)``."""
    w = as_float_array(weights, "weights", min_ndim=3)
    peak = w.max(axis=-1).mean(axis=-1)  # (H, T, T) -> (H, T) -> (H,)
    return HeadFocus(peak=peak, sharpest=int(np.argmax(peak)), flattest=int(np.argmin(peak)),
                     spread=float(np.ptp(w, axis=0).max()))  # (H, T, T) -> (T, T) -> ()


def torch_multihead_module(
    w_q: np.ndarray,
    w_k: np.ndarray,
    w_v: np.ndarray,
    w_o: np.ndarray,
    n_heads: int,
    dtype: torch.dtype = torch.float64,
) -> nn.MultiheadAttention:
    r"""A ``torch.nn.MultiheadAttention(d_model, n_heads, bias=False, batch_first=True)`` holding our weights.

    PyTorch multiplies by the transposed weight (``x @ W.T``, the ``nn.Linear`` convention),
    so with our row-vector ``x @ W_q`` convention:

    .. math::

        \texttt{in\_proj\_weight} = \begin{bmatrix} W_q^\top \\ W_k^\top \\ W_v^\top \end{bmatrix}
        \ (3 d_{model} \times d_{model}),\qquad \texttt{out\_proj.weight} = W_o^\top
    """
    mats = [as_float_array(w, name, min_ndim=2) for w, name in ((w_q, "w_q"), (w_k, "w_k"), (w_v, "w_v"), (w_o, "w_o"))]
    d_model = mats[0].shape[0]
    for m, name in zip(mats, ("w_q", "w_k", "w_v", "w_o"), strict=True):
        if m.shape != (d_model, d_model):
            raise ValueError(f"{name} must have shape ({d_model}, {d_model}) like w_q, got {m.shape}.")
    head_of_column(d_model, n_heads)  # raises if n_heads does not divide d_model
    mha = nn.MultiheadAttention(d_model, n_heads, bias=False, batch_first=True, dtype=dtype)
    in_proj = np.concatenate([mats[0].T, mats[1].T, mats[2].T], axis=0)  # -> (3 d_model, d_model)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.tensor(in_proj))
        mha.out_proj.weight.copy_(torch.tensor(mats[3].T))  # (d_model, d_model)
    return mha.eval()


def torch_multihead_attention(
    x: np.ndarray,
    w_q: np.ndarray,
    w_k: np.ndarray,
    w_v: np.ndarray,
    w_o: np.ndarray,
    n_heads: int,
    dtype: torch.dtype = torch.float64,
) -> tuple[np.ndarray, np.ndarray]:
    """``torch.nn.MultiheadAttention`` self-attention on ``x`` ``(T, d_model)`` with our weights.

    Returns ``(output (T, d_model), weights (H, T, T))`` as float64 NumPy arrays; the weights
    are per head (``average_attn_weights=False``), comparable with `multi_head_attention`.
    """
    x = as_float_array(x, "x", min_ndim=2)
    if x.ndim != 2:
        raise ValueError(f"x must be one sequence of shape (T, d_model), got shape {x.shape}.")
    mha = torch_multihead_module(w_q, w_k, w_v, w_o, n_heads, dtype=dtype)
    if x.shape[1] != mha.embed_dim:
        raise ValueError(f"x has shape {x.shape} but the weights are ({mha.embed_dim}, {mha.embed_dim}).")
    xt = torch.tensor(x, dtype=dtype).unsqueeze(0)  # (T, d_model) -> (1, T, d_model): a batch of one
    with torch.no_grad():
        out, attn = mha(xt, xt, xt, need_weights=True, average_attn_weights=False)  # (1, T, d_model), (1, H, T, T)
    return out[0].double().numpy(), attn[0].double().numpy()
