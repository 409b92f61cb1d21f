r"""Scaled dot-product attention, the one formula the whole lesson is about.

.. math::

    \operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V

Shape convention, used everywhere in `core` (row vectors, as in the lesson):

* ``B`` batch, ``H`` heads, ``T`` sequence length (``T_q`` queries, ``T_k`` keys),
* ``d_model`` embedding width, ``d_k`` width of a query/key, ``d_v`` width of a value.

A single head works on ``(..., T, d_k)`` arrays; multi-head code uses ``(B, H, T, d_k)``.
Any leading ``...`` dimensions broadcast like NumPy's (and PyTorch's) ``@``.
"""

from __future__ import annotations

import numpy as np

from core._checks import as_float_array, positive_int


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    r"""Numerically stable softmax along `axis`.

    .. math:: \operatorname{softmax}(x)_i = \frac{e^{x_i - m}}{\sum_j e^{x_j - m}},\quad m = \max_j x_j

    Subtracting the maximum changes nothing mathematically (it cancels between
    numerator and denominator) but keeps ``exp`` from overflowing. Entries equal
    to ``-inf`` mean "excluded" and get weight exactly 0.

    Raises `ValueError` for NaN or ``+inf`` entries, or a slice that is all ``-inf``
    (there would be nothing to normalise over).
    """
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        raise ValueError(f"softmax got an empty array (shape {x.shape}).")
    if np.isnan(x).any() or np.isposinf(x).any():
        raise ValueError(f"softmax input of shape {x.shape} contains NaN or +inf.")
    m = np.max(x, axis=axis, keepdims=True)
    if np.isneginf(m).any():
        raise ValueError(
            f"softmax input of shape {x.shape} has a slice along axis {axis} that is entirely -inf: "
            "nothing is left to normalise over."
        )
    e = np.exp(x - m)  # same shape as x; every entry in [0, 1], the max is exactly 1
    return e / e.sum(axis=axis, keepdims=True)


def causal_mask(n: int) -> np.ndarray:
    """Boolean ``(n, n)`` mask that lets position ``i`` see positions ``0..i`` only.

    ``mask[i, j]`` is True (may attend) when ``j <= i``: on and below the diagonal.
    This is the decoder's masked self-attention: nothing can look at the future.
    """
    n = positive_int(n, "n")
    return np.tri(n, n, dtype=bool)


def scaled_dot_product_attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: np.ndarray | None = None,
    scale: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Scaled dot-product attention, returning ``(output, weights)``.

    .. math::

        S = s\,Q K^\top,\qquad A = \operatorname{softmax}_{\text{row}}(S),\qquad
        \text{output} = A V,\qquad s = 1/\sqrt{d_k}\ \text{by default}

    Args:
        q: queries ``(..., T_q, d_k)``.
        k: keys ``(..., T_k, d_k)``.
        v: values ``(..., T_k, d_v)``.
        mask: optional boolean array broadcastable to ``(..., T_q, T_k)``;
            True means "may attend" (the meaning of a boolean ``attn_mask`` in
            ``torch.nn.functional.scaled_dot_product_attention``).
        scale: factor applied to the scores; defaults to ``1 / sqrt(d_k)``.

    Returns:
        ``output`` of shape ``(..., T_q, d_v)`` and ``weights`` of shape
        ``(..., T_q, T_k)``. Each row of ``weights`` sums to 1 and masked
        entries are exactly 0.

    Raises:
        ValueError: on mismatched shapes, a mask that does not broadcast or
            leaves a query with no key, non-finite input, or empty sizes.
    """
    q = as_float_array(q, "q", min_ndim=2)
    k = as_float_array(k, "k", min_ndim=2)
    v = as_float_array(v, "v", min_ndim=2)
    batch = _batch_shape(q, k, v)
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else _finite_scale(scale)

    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported just below, as a ValueError
        scores = (q @ np.swapaxes(k, -1, -2)) * scale  # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)
    if not np.all(np.isfinite(scores)):
        raise ValueError(
            f"the attention scores overflowed (q {q.shape}, k {k.shape}, scale {scale}); the inputs are too large."
        )
    if mask is not None:
        target = batch + scores.shape[-2:]  # (..., T_q, T_k)
        mask = _allowed_keys(mask, target)
        scores = np.where(mask, np.broadcast_to(scores, target), -np.inf)  # excluded keys -> -inf -> weight 0

    weights = softmax(scores, axis=-1)  # (..., T_q, T_k), rows sum to 1
    output = weights @ v  # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)
    return output, weights


def _batch_shape(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> tuple[int, ...]:
    """The leading dimensions `q`, `k` and `v` broadcast to, once Q K^T and A V are known to fit: q and k share d_k,
    k and v share T_k."""
    d_k = q.shape[-1]
    if k.shape[-1] != d_k:
        raise ValueError(
            f"q and k must have the same last dimension d_k to be multiplied as Q K^T: "
            f"q has shape {q.shape} (d_k={d_k}), k has shape {k.shape} (d_k={k.shape[-1]})."
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same number of positions T_k (one value per key): "
            f"k has shape {k.shape}, v has shape {v.shape}."
        )
    try:
        return np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(
            f"the leading (batch) dimensions of q {q.shape}, k {k.shape} and v {v.shape} do not broadcast."
        ) from None


def _finite_scale(scale: float) -> float:
    if not np.isfinite(scale):
        raise ValueError(f"scale must be a finite number, got {scale!r}.")
    return scale


def _allowed_keys(mask: np.ndarray, target: tuple[int, ...]) -> np.ndarray:
    """`mask` broadcast to the scores' shape `target` ``(..., T_q, T_k)``: boolean, True where a query may attend,
    and at least one key allowed for every query."""
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise ValueError(
            f"mask must be boolean (True = may attend), got dtype {mask.dtype} with shape {mask.shape}."
        )
    try:
        fits = np.broadcast_shapes(mask.shape, target) == target
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"mask of shape {mask.shape} does not broadcast to the scores' shape {target} (..., T_q, T_k)."
        )
    mask = np.broadcast_to(mask, target)  # (..., T_q, T_k)
    empty_rows = ~mask.any(axis=-1)
    if empty_rows.any():
        where = tuple(int(i) for i in np.argwhere(empty_rows)[0])
        raise ValueError(
            f"mask of shape {mask.shape} lets query row {where} attend to no key at all; "
            "every query needs at least one allowed key."
        )
    return mask
