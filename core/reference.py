"""PyTorch references for the NumPy functions, used for live cross-checks.

These run the same inputs through PyTorch's own implementations (in float32,
as a student's GPU code would) so a page can show the largest difference.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F


def torch_scaled_dot_product_attention(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None = None
) -> np.ndarray:
    """Output of ``torch.nn.functional.scaled_dot_product_attention`` in float32, as NumPy."""
    t = [torch.tensor(np.asarray(a), dtype=torch.float32) for a in (q, k, v)]
    attn_mask = None if mask is None else torch.tensor(np.asarray(mask, dtype=bool))
    with torch.no_grad():
        out = F.scaled_dot_product_attention(*t, attn_mask=attn_mask)  # (..., T_q, d_v)
    return out.numpy()


def max_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    """Largest absolute elementwise difference between two arrays of the same shape."""
    return float(np.max(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))))
