r"""What the sinusoidal positional encoding is made of, and why nearby positions look alike.

The encoding of `core.positional` puts one sine/cosine pair per frequency:

.. math::

    \omega_i = \frac{1}{10000^{2i/d_{model}}},\qquad
    PE_{p,\,2i} = \sin(\omega_i\, p),\qquad PE_{p,\,2i+1} = \cos(\omega_i\, p)

so dimension ``2i`` or ``2i + 1`` repeats every ``\lambda_i = 2\pi / \omega_i`` positions, from
``2\pi`` (dims 0 and 1) up to almost ``2\pi \cdot 10000`` (the last pair). Because each pair is a
point on the unit circle turned by the angle ``\omega_i p``, the dot product of two positions only
depends on how far apart they are:

.. math::

    PE_p \cdot PE_{p+k} = \sum_i \big[\sin(\omega_i p)\sin(\omega_i (p+k)) + \cos(\omega_i p)\cos(\omega_i (p+k))\big]
                        = \sum_i \cos(\omega_i k)

This module computes those pieces: frequencies, wavelengths, the encoding at real-valued
positions (for smooth curves), the position-by-position similarity, and its offset-only form.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core._checks import as_float_array, positive_int
from core.positional import positional_encoding


def angular_frequencies(d_model: int) -> np.ndarray:
    r"""Angular frequency of every dimension, shape ``(d_model,)``.

    .. math:: \omega_{2i} = \omega_{2i+1} = 10000^{-2i/d_{model}}

    Dimensions ``2i`` (sine) and ``2i + 1`` (cosine) share one frequency.
    """
    d_model = positive_int(d_model, "d_model")
    pair = np.arange(d_model) // 2  # (d_model,): dims 2i and 2i+1 share index i
    return 1.0 / np.power(10000.0, 2 * pair / d_model)  # (d_model,)


def wavelengths(d_model: int) -> np.ndarray:
    r"""Wavelength (period, in positions) of every dimension, shape ``(d_model,)``.

    .. math:: \lambda_{2i} = \lambda_{2i+1} = \frac{2\pi}{\omega_i} = 2\pi \cdot 10000^{2i/d_{model}}

    The shortest is ``2π ≈ 6.28`` positions (dims 0 and 1); they grow geometrically
    towards ``2π · 10000 ≈ 62 832``.
    """
    return 2.0 * np.pi / angular_frequencies(d_model)  # (d_model,)


def _dims_array(dims: Sequence[int] | np.ndarray | None, d_model: int) -> np.ndarray:
    if dims is None:
        return np.arange(d_model)
    arr = np.asarray(dims)
    if arr.ndim != 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"dims must be a non-empty 1-D list of integer dimensions, got {dims!r}.")
    if arr.min() < 0 or arr.max() >= d_model:
        raise ValueError(f"dims must lie in 0..{d_model - 1} for d_model={d_model}, got {arr.tolist()}.")
    return arr.astype(np.int64)


def positional_encoding_at(
    positions: Sequence[float] | np.ndarray,
    d_model: int,
    dims: Sequence[int] | np.ndarray | None = None,
) -> np.ndarray:
    r"""The encoding's formula evaluated at any real positions, shape ``(len(positions), len(dims))``.

    .. math::

        PE_{p,d} = \begin{cases}\sin(\omega_d\, p) & d \text{ even}\\ \cos(\omega_d\, p) & d \text{ odd}\end{cases}

    At integer positions ``0..T-1`` and ``dims=None`` this equals
    ``core.positional_encoding(T, d_model)``; in between it traces the smooth
    sine and cosine waves the table samples.

    Args:
        positions: 1-D array of (possibly fractional) positions ``p``.
        d_model: embedding width (sets the frequencies).
        dims: which dimensions to evaluate; all of them by default.
    """
    d_model = positive_int(d_model, "d_model")
    p = as_float_array(positions, "positions", min_ndim=1)
    if p.ndim != 1:
        raise ValueError(f"positions must be 1-D, got shape {p.shape}.")
    d = _dims_array(dims, d_model)
    omega = angular_frequencies(d_model)[d]  # (n_dims,)
    angles = p[:, None] * omega[None, :]  # (P, 1) * (1, n_dims) -> (P, n_dims)
    return np.where(d[None, :] % 2 == 0, np.sin(angles), np.cos(angles))  # (P, n_dims)


def distinct_positions(pe: np.ndarray, decimals: int = 9) -> int:
    """How many rows of the encoding table differ (after rounding to `decimals`): one per position, ideally.

    Rows that agreed would make two positions indistinguishable to the model.
    """
    pe = as_float_array(pe, "pe", min_ndim=2)
    if pe.ndim != 2:
        raise ValueError(f"pe must be a (positions, d_model) matrix, got shape {pe.shape}.")
    rounded = np.ascontiguousarray(np.round(pe, decimals) + 0.0)  # + 0.0: -0.0 becomes 0.0, equal as numbers
    return len({row.tobytes() for row in rounded})  # rows equal as numbers are equal as bytes


def position_similarity(pe: np.ndarray) -> np.ndarray:
    r"""Dot product between the encodings of every pair of positions, shape ``(T, T)``.

    .. math:: S = PE\, PE^\top,\qquad S_{pq} = PE_p \cdot PE_q

    The diagonal is each position's squared length (``d_model / 2`` for even
    ``d_model``); entries fall off as positions move apart.
    """
    pe = as_float_array(pe, "pe", min_ndim=2)
    if pe.ndim != 2:
        raise ValueError(f"pe must be a (positions, d_model) matrix, got shape {pe.shape}.")
    return pe @ pe.T  # (T, d_model) @ (d_model, T) -> (T, T)


def similarity_at_offset(offsets: Sequence[float] | np.ndarray, d_model: int) -> np.ndarray:
    r"""The offset-only part of the similarity, shape ``(len(offsets),)``.

    .. math:: s(k) = \sum_{i=0}^{\lfloor d_{model}/2 \rfloor - 1} \cos(\omega_i k)

    For even ``d_model`` this is exactly ``PE_p · PE_{p+k}`` for every start ``p``:
    the similarity of two positions depends only on their distance. For odd
    ``d_model`` the last, unpaired sine dimension adds
    ``sin(ω p) sin(ω (p+k))``, which does depend on ``p`` (it is 0 at ``p = 0``).
    """
    d_model = positive_int(d_model, "d_model")
    k = as_float_array(offsets, "offsets", min_ndim=1)
    if k.ndim != 1:
        raise ValueError(f"offsets must be 1-D, got shape {k.shape}.")
    omega = angular_frequencies(d_model)[0 : 2 * (d_model // 2) : 2]  # (d_model // 2,): one per full pair
    return np.cos(k[:, None] * omega[None, :]).sum(axis=1)  # (K, 1) * (1, pairs) -> (K, pairs) -> (K,)


def offset_invariance_error(pe: np.ndarray) -> float:
    r"""How far the similarity is from depending on the offset alone.

    .. math:: \max_{p,\,k \ge 0} \big|PE_p \cdot PE_{p+k} - s(k)\big|

    with ``s(k)`` from `similarity_at_offset`. About ``1e-13`` (rounding) for
    even ``d_model``; for odd ``d_model`` the unpaired sine makes it larger.
    """
    pe = as_float_array(pe, "pe", min_ndim=2)
    return _offset_error(position_similarity(pe), pe.shape[1])


def _offset_error(sim: np.ndarray, d_model: int) -> float:
    """`offset_invariance_error` from the similarity matrix ``S = PE PEᵀ``, ``(T, T)``."""
    t = len(sim)
    s = similarity_at_offset(np.arange(t), d_model)  # (T,): s(k)
    k = np.abs(np.arange(t)[None, :] - np.arange(t)[:, None])  # (T, T): k = |q - p|
    return float(np.max(np.triu(np.abs(sim - s[k]))))  # the pairs q >= p; below the diagonal 0, never the max


@dataclass(frozen=True)
class EncodingTable:
    """The encoding of `positions` positions at width `d_model`, and how its rows relate."""

    pe: np.ndarray  #: (T, d_model) the table
    similarity: np.ndarray  #: (T, T) PE · PEᵀ
    offset_formula: np.ndarray  #: (T,) Σ_i cos(ω_i k) for offsets k = 0 … T-1
    offset_error: float  #: max |PE_p · PE_q − formula(q − p)| over all pairs
    distinct: int  #: how many rows differ


def encoding_table(positions: int, d_model: int) -> EncodingTable:
    """`positional_encoding` with its similarity matrix and the offset-only check."""
    pe = positional_encoding(positions, d_model)
    sim = position_similarity(pe)
    return EncodingTable(pe=pe, similarity=sim, offset_formula=similarity_at_offset(np.arange(positions), d_model),
                         offset_error=_offset_error(sim, d_model), distinct=distinct_positions(pe))


@dataclass(frozen=True)
class SampledWaves:
    """Chosen dimensions of the encoding as smooth curves and at the integer positions."""

    dims: tuple[int, ...]
    wavelengths: np.ndarray  #: (d_model,) λ of every dimension
    fine_positions: np.ndarray  #: (P,) real positions, at least 25 per period of the fastest wave
    fine_values: np.ndarray  #: (P, n_dims) the waves there
    table_values: np.ndarray  #: (T, n_dims) the table's columns: the waves at 0 … T-1


def sampled_waves(positions: int, d_model: int, dims: Sequence[int]) -> SampledWaves:
    """`positional_encoding_at` on a fine grid over ``[0, positions - 1]`` and at the integer positions."""
    span = max(positions - 1, 1)
    fine = np.linspace(0.0, span, min(8 * span, 2048) + 1)  # >= 25 samples per period of the fastest wave
    return SampledWaves(dims=tuple(int(d) for d in dims), wavelengths=wavelengths(d_model), fine_positions=fine,
                        fine_values=positional_encoding_at(fine, d_model, dims),
                        table_values=positional_encoding_at(np.arange(positions, dtype=np.float64), d_model, dims))

