r"""Multi-head attention: several scaled dot-product attentions side by side.

.. math::

    \operatorname{MultiHead}(X) = \operatorname{Concat}(\text{head}_1, \dots, \text{head}_H)\, W_o,\qquad
    \text{head}_h = \operatorname{Attention}(X W_q^{(h)}, X W_k^{(h)}, X W_v^{(h)})

The projections are full ``(d_model, d_model)`` matrices; head ``h`` uses columns
``h*d_k : (h+1)*d_k`` of ``X W_q``, ``X W_k`` and ``X W_v``, with ``d_k = d_model / n_heads``.
That column split is exactly what ``torch.nn.MultiheadAttention`` does.
"""

from __future__ import annotations

import numpy as np

from core._checks import as_float_array, positive_int
from core.attention import scaled_dot_product_attention


def split_heads(x: np.ndarray, n_heads: int) -> np.ndarray:
    """Split the last dimension into heads: ``(..., T, d_model) -> (..., H, T, d_k)``."""
    *lead, t, d_model = x.shape
    d_k = d_model // n_heads
    x = x.reshape(*lead, t, n_heads, d_k)  # (..., T, d_model) -> (..., T, H, d_k)
    return np.swapaxes(x, -2, -3)  # (..., T, H, d_k) -> (..., H, T, d_k)


def merge_heads(x: np.ndarray) -> np.ndarray:
    """Concatenate heads back: ``(..., H, T, d_k) -> (..., T, H * d_k)``."""
    *lead, h, t, d_k = x.shape
    x = np.swapaxes(x, -2, -3)  # (..., H, T, d_k) -> (..., T, H, d_k)
    return x.reshape(*lead, t, h * d_k)  # (..., T, H, d_k) -> (..., T, d_model)


def multi_head_attention(
    x: np.ndarray,
    w_q: np.ndarray,
    w_k: np.ndarray,
    w_v: np.ndarray,
    w_o: np.ndarray,
    n_heads: int,
    mask: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Multi-head self-attention over `x`, returning ``(output, weights)``.

    Args:
        x: input embeddings ``(..., T, d_model)``.
        w_q, w_k, w_v, w_o: ``(d_model, d_model)`` matrices applied as ``x @ w``.
        n_heads: number of heads ``H``; must divide ``d_model``.
        mask: optional boolean mask broadcastable to ``(..., T, T)``, True = may attend.
            The same mask is used by every head.

    Returns:
        ``output`` ``(..., T, d_model)`` and per-head ``weights`` ``(..., H, T, T)``.
    """
    x = as_float_array(x, "x", min_ndim=2)
    n_heads = positive_int(n_heads, "n_heads")
    w_q, w_k, w_v, w_o = checked_projections(x, w_q, w_k, w_v, w_o, n_heads)
    q = split_heads(x @ w_q, n_heads)  # (..., T, d_model) @ (d_model, d_model) -> (..., H, T, d_k)
    k = split_heads(x @ w_k, n_heads)  # (..., H, T, d_k)
    v = split_heads(x @ w_v, n_heads)  # (..., H, T, d_k)
    # (..., H, T, d_k) each -> heads (..., H, T, d_k) and weights (..., H, T, T)
    heads, weights = scaled_dot_product_attention(q, k, v, mask=every_heads_mask(mask))
    output = merge_heads(heads) @ w_o  # (..., T, d_model) @ (d_model, d_model) -> (..., T, d_model)
    return output, weights


def checked_projections(x: np.ndarray, w_q: np.ndarray, w_k: np.ndarray, w_v: np.ndarray, w_o: np.ndarray,
                        n_heads: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """W_q, W_k, W_v, W_o as float arrays, each ``(d_model, d_model)`` for ``x`` ``(..., T, d_model)``, and
    `n_heads` (a positive int) a divisor of d_model; a ValueError that says which is wrong otherwise."""
    d_model = x.shape[-1]
    if d_model % n_heads != 0:
        raise ValueError(
            f"d_model={d_model} (x has shape {x.shape}) is not divisible by n_heads={n_heads}; "
            f"choose a divisor of {d_model}."
        )
    mats = []
    for name, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v), ("w_o", w_o)):
        mats.append(as_float_array(w, name, min_ndim=2))
        if mats[-1].shape != (d_model, d_model):
            raise ValueError(
                f"{name} must have shape (d_model, d_model) = ({d_model}, {d_model}) to match x {x.shape}, "
                f"got {mats[-1].shape}."
            )
    w_q, w_k, w_v, w_o = mats
    return w_q, w_k, w_v, w_o


def every_heads_mask(mask: np.ndarray | None) -> np.ndarray | None:
    """A mask ``(..., T, T)`` for every head: ``(..., 1, T, T)``, broadcast over the heads' axis."""
    if mask is None:
        return None
    mask = np.asarray(mask)
    return np.expand_dims(mask, -3) if mask.ndim >= 2 else mask
