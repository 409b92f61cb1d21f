r"""Self-attention ignores order: permute the tokens and the outputs are permuted the same way.

Write the reordering as a permutation matrix :math:`P` (row ``i`` of :math:`PX` is row
``perm[i]`` of :math:`X`). Every step of self-attention commutes with it:

.. math::

    (PX) W_q = P(X W_q),\qquad
    \operatorname{softmax}\!\left(\frac{P Q K^\top P^\top}{\sqrt{d_k}}\right) = P A P^\top,\qquad
    P A P^\top \, P V = P (A V)

because :math:`P^\top P = I` and a softmax over a reordered row is the reordered softmax.
So :math:`\operatorname{Attn}(PX) = P\,\operatorname{Attn}(X)`: undo the permutation on the
output and nothing has changed. Adding a positional encoding by *position*,
:math:`PX + PE \ne P(X + PE)`, is what breaks the symmetry.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from core._checks import as_float_array, positive_int
from core.multihead import multi_head_attention
from core.multihead_steps import torch_multihead_module
from core.positional import positional_encoding


def parse_permutation(text: str, n: int) -> np.ndarray:
    """Read a permutation of ``0..n-1`` from text such as ``"2, 0, 1"`` (commas and/or spaces).

    Raises:
        ValueError: naming the problem: empty text, a non-integer entry, the wrong count,
            a number out of range, or a repeated number.
    """
    n = positive_int(n, "n")
    parts = [p for p in re.split(r"[,\s]+", str(text).strip()) if p]
    if not parts:
        raise ValueError(f"the permutation is empty; type {n} numbers, an ordering of 0..{n - 1}.")
    values = []
    for p in parts:
        try:
            values.append(int(p))
        except ValueError:
            raise ValueError(f"{p!r} is not a whole number; type an ordering of 0..{n - 1}.") from None
    return check_permutation(values, n)


def check_permutation(perm: Sequence[int] | np.ndarray, n: int) -> np.ndarray:
    """Return `perm` as an int array if it holds each of ``0..n-1`` exactly once, else raise `ValueError`."""
    n = positive_int(n, "n")
    arr = np.asarray(perm)
    if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(
            f"a permutation must be a 1-D list of whole numbers, got shape {arr.shape}, dtype {arr.dtype}."
        )
    values = [int(v) for v in arr]
    bad = sorted({v for v in values if not 0 <= v < n})
    if bad:
        raise ValueError(f"{', '.join(map(str, bad))} out of range: positions run from 0 to {n - 1}.")
    repeated = sorted(v for v, count in Counter(values).items() if count > 1)
    if repeated:
        missing = sorted(set(range(n)) - set(values))
        also = f" and {', '.join(map(str, missing))} missing" if missing else ""
        raise ValueError(
            f"{', '.join(map(str, repeated))} repeated{also}: each of 0..{n - 1} must appear exactly once."
        )
    if len(values) != n:
        raise ValueError(f"the permutation has {len(values)} number(s) but there are {n} tokens; "
                         f"type all of 0..{n - 1} once each.")
    return np.asarray(values, dtype=np.int64)


def format_permutation(perm: Sequence[int] | np.ndarray) -> str:
    """The text form `parse_permutation` reads: ``[2, 0, 1] -> "2,0,1"``."""
    return ",".join(str(int(p)) for p in perm)


def default_permutation(n: int) -> np.ndarray:
    """Every token moves one place to the right and the last one wraps to the front.

    ``default_permutation(3) -> [2, 0, 1]``, the permutation the lesson uses.
    """
    n = positive_int(n, "n")
    return np.roll(np.arange(n), 1)  # (n,)


def random_permutation(n: int, seed: int) -> np.ndarray:
    """A random permutation of ``0..n-1`` from ``np.random.default_rng(seed)``, never the identity if ``n >= 2``."""
    n = positive_int(n, "n")
    rng = np.random.default_rng(seed)
    while True:
        perm = rng.permutation(n)
        if n < 2 or np.any(perm != np.arange(n)):
            return perm


def inverse_permutation(perm: np.ndarray) -> np.ndarray:
    """``inv`` with ``inv[perm[i]] = i``, so that ``x[perm][inv] == x``."""
    perm = np.asarray(perm)
    inv = np.empty_like(perm)
    inv[perm] = np.arange(len(perm))
    return inv


@dataclass(frozen=True)
class PermutationCheck:
    """Self-attention on a sequence and on its reordering, and how far apart they are once re-aligned.

    ``perm[i]`` is the original position of the token at position ``i`` of the permuted sequence.
    """

    perm: np.ndarray  # (T,)
    add_pe: bool
    x: np.ndarray  # (T, d_model): input fed to attention, original order (incl. PE if add_pe)
    x_perm: np.ndarray  # (T, d_model): input fed to attention, permuted order (incl. PE if add_pe)
    output: np.ndarray  # (T, d_model): Attn(x)
    output_perm: np.ndarray  # (T, d_model): Attn(x_perm), in permuted order
    output_unpermuted: np.ndarray  # (T, d_model): output_perm moved back to the original order
    weights: np.ndarray  # (H, T, T): attention maps of the original sequence
    weights_perm: np.ndarray  # (H, T, T): attention maps of the permuted sequence
    weights_expected: np.ndarray  # (H, T, T): P A P^T, the original maps with rows and columns reordered
    output_diff: float  # max |output - output_unpermuted|
    weights_diff: float  # max |weights_perm - weights_expected|


def permutation_check(
    x: np.ndarray,
    projections: Sequence[np.ndarray],
    perm: Sequence[int] | np.ndarray,
    n_heads: int = 1,
    add_pe: bool = False,
) -> PermutationCheck:
    r"""Run self-attention on token embeddings ``x`` ``(T, d_model)`` and on ``x[perm]``, and compare.

    Without positional encoding the inputs are :math:`X` and :math:`PX`; with it, the encoding
    goes with the *position*, so they are :math:`X + PE` and :math:`PX + PE`.

    Args:
        x: token embeddings ``(T, d_model)``, before any positional encoding.
        projections: ``(W_q, W_k, W_v, W_o)``, each ``(d_model, d_model)``.
        perm: a permutation of ``0..T-1``.
        n_heads: heads of `multi_head_attention` (a divisor of ``d_model``).
        add_pe: add `positional_encoding` ``(T, d_model)`` to both inputs by position.

    Raises:
        ValueError: if ``perm`` is not a permutation of ``0..T-1``, or for any bad shape.
    """
    x = as_float_array(x, "x", min_ndim=2)
    if x.ndim != 2:
        raise ValueError(f"x must be one sequence of shape (T, d_model), got shape {x.shape}.")
    t, d_model = x.shape
    perm = check_permutation(perm, t)
    if len(projections) != 4:
        raise ValueError(f"projections must be (W_q, W_k, W_v, W_o), got {len(projections)} matrices.")
    pe = positional_encoding(t, d_model) if add_pe else np.zeros((t, d_model))  # (T, d_model)
    x_in = x + pe  # (T, d_model)
    x_perm_in = x[perm] + pe  # rows reordered, then the encoding of each *position*: (T, d_model)
    output, weights = multi_head_attention(x_in, *projections, n_heads=n_heads)  # (T, d_model), (H, T, T)
    output_perm, weights_perm = multi_head_attention(x_perm_in, *projections, n_heads=n_heads)
    output_unpermuted = output_perm[inverse_permutation(perm)]  # P^T Attn(PX): back to the original order
    weights_expected = weights[:, perm][:, :, perm]  # P A P^T for every head: (H, T, T)
    return PermutationCheck(
        perm=perm, add_pe=bool(add_pe), x=x_in, x_perm=x_perm_in, output=output, output_perm=output_perm,
        output_unpermuted=output_unpermuted, weights=weights, weights_perm=weights_perm,
        weights_expected=weights_expected,
        output_diff=float(np.max(np.abs(output - output_unpermuted))),
        weights_diff=float(np.max(np.abs(weights_perm - weights_expected))),
    )


def torch_permutation_difference(
    x: np.ndarray,
    projections: Sequence[np.ndarray],
    perm: Sequence[int] | np.ndarray,
    n_heads: int,
    add_pe: bool = False,
    dtype: torch.dtype = torch.float32,
) -> float:
    """The lesson's check with ``torch.nn.MultiheadAttention``: max |out - un-permuted out of the permuted input|.

    Same inputs and weights as `permutation_check`, run through PyTorch (float32 by default,
    as in the lesson, so the difference is float32 rounding noise of about 1e-7 without PE).
    """
    x = as_float_array(x, "x", min_ndim=2)
    if x.ndim != 2:
        raise ValueError(f"x must be one sequence of shape (T, d_model), got shape {x.shape}.")
    t, d_model = x.shape
    perm = check_permutation(perm, t)
    mha = torch_multihead_module(*projections, n_heads=n_heads, dtype=dtype)
    pe = positional_encoding(t, d_model) if add_pe else np.zeros((t, d_model))  # (T, d_model)
    xt = torch.tensor(x[None], dtype=dtype)  # (1, T, d_model): a batch of one
    pt = torch.tensor(pe[None], dtype=dtype)  # (1, T, d_model)
    idx = torch.tensor(perm)
    x_permuted = xt[:, idx, :]  # (1, T, d_model), as in the lesson: x[:, perm, :]
    with torch.no_grad():
        out, _ = mha(xt + pt, xt + pt, xt + pt)  # (1, T, d_model)
        out_permuted, _ = mha(x_permuted + pt, x_permuted + pt, x_permuted + pt)  # (1, T, d_model)
    out_unpermuted = torch.empty_like(out_permuted)
    out_unpermuted[:, idx, :] = out_permuted  # the lesson's un-permuting step
    return float((out - out_unpermuted).abs().max().item())
