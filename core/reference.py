"""PyTorch references for the NumPy functions, used for live cross-checks.

These run the same inputs through PyTorch's own implementations, so a page can show the largest difference
between our NumPy result and PyTorch's. In float32 by default, as a student's GPU code would; in float64 when
any difference beyond rounding should count as a bug.
"""

from __future__ import annotations

from typing import TypedDict, Unpack

import numpy as np
import torch
import torch.nn.functional as F

from core._checks import as_float_array


def torch_scaled_dot_product_attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: np.ndarray | None = None,
    *,
    is_causal: bool = False,
    scale: float | None = None,
    dtype: type[np.floating] = np.float32,
) -> np.ndarray:
    r"""Output of ``torch.nn.functional.scaled_dot_product_attention`` on the same Q, K, V, as NumPy.

    Args:
        q, k, v: ``(..., T_q, d_k)``, ``(..., T_k, d_k)`` and ``(..., T_k, d_v)``.
        mask: True where a query may attend to a key, ``(T_q, T_k)`` or broadcastable (ours and PyTorch's rule).
        is_causal: let PyTorch build its own causal mask, so comparing with ours checks that the two agree.
        scale: PyTorch's ``scale``: None is :math:`1/\sqrt{d_k}`, 1.0 turns the scaling off.
        dtype: float32 (PyTorch's default, about 1e-7 from our float64) or float64 (any difference is a bug,
            not rounding: in float32 an unscaled d_k = 1024 already differs by about 1e-4).
    """
    arrays = (as_float_array(a, name, min_ndim=2) for a, name in zip((q, k, v), "qkv", strict=True))
    t = [torch.from_numpy(a.astype(dtype)) for a in arrays]  # a copy: the caller's array may be read-only
    attn_mask = None if mask is None else torch.tensor(np.asarray(mask, dtype=bool))
    with torch.no_grad():
        out = F.scaled_dot_product_attention(*t, attn_mask=attn_mask, is_causal=bool(is_causal),
                                             scale=scale)  # (..., T_q, d_v)
    return out.numpy()


class TorchOptions(TypedDict, total=False):
    """The keyword options of `torch_scaled_dot_product_attention`, passed on by `torch_difference`."""

    is_causal: bool
    scale: float | None
    dtype: type[np.floating]


def torch_difference(ours: np.ndarray, q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None = None,
                     **options: Unpack[TorchOptions]) -> float:
    """max |ours − PyTorch's attention of the same q, k, v|: the cross-check a page shows.

    `ours` is our NumPy output for these inputs; `mask` and the `options` are those of
    `torch_scaled_dot_product_attention` (float32 unless ``dtype=np.float64``).
    """
    return max_abs_diff(ours, torch_scaled_dot_product_attention(q, k, v, mask, **options))


def max_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    """Largest absolute elementwise difference between two arrays of the same shape."""
    return float(np.max(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))))
