r"""Why attention divides the scores by :math:`\sqrt{d_k}`.

If the entries of a query :math:`q` and a key :math:`k` are independent with mean 0
and variance 1, their dot product is a sum of :math:`d_k` such products, so

.. math::

    \operatorname{Var}(q \cdot k) = \sum_{i=1}^{d_k} \operatorname{Var}(q_i k_i) = d_k,
    \qquad
    \operatorname{Var}\!\left(\frac{q \cdot k}{\sqrt{d_k}}\right) = 1 .

Unscaled, the scores spread further apart as :math:`d_k` grows, the softmax puts
almost all its weight on one key (it *saturates*), and its Jacobian

.. math:: J = \frac{\partial\, \operatorname{softmax}(s)}{\partial s} = \operatorname{diag}(p) - p\,p^\top

tends to zero, so almost no gradient flows back to the queries and keys.
This module measures all of that: score variance, the largest weight, the row
entropy and the Jacobian's norm, as functions of :math:`d_k`, with and without
the scaling. Shapes follow ``core``: ``(..., T, d_k)`` for Q and K, weights ``(..., T_q, T_k)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core._checks import as_float_array, positive_int
from core.attention import scaled_dot_product_attention, softmax

#: The key widths swept on the scaling page: 1, 2, 4, ..., 1024.
POWERS_OF_TWO_D_K: tuple[int, ...] = tuple(2**i for i in range(11))

_SWEEP_STREAM = 1  # the sweep's random numbers come from a different stream than `random_qkv`'s


def random_qkv(
    seq_len: int, d_k: int, seed: int = 0, *, max_seq_len: int = 32, max_d_k: int = 1024
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Standard-normal Q, K, V of shape ``(seq_len, d_k)`` each (unit variance, as the maths assumes).

    All three are cut from one ``(max_seq_len, max_d_k)`` draw per matrix, so a
    longer sequence only *adds* tokens and a wider ``d_k`` only *adds* dimensions:
    the first scores' terms stay the same while you move the sliders.
    """
    seq_len, d_k = positive_int(seq_len, "seq_len"), positive_int(d_k, "d_k")
    if seq_len > max_seq_len or d_k > max_d_k:
        raise ValueError(
            f"random_qkv draws at most ({max_seq_len}, {max_d_k}) = (max_seq_len, max_d_k); "
            f"asked for (seq_len, d_k) = ({seq_len}, {d_k})."
        )
    rng = np.random.default_rng(seed)
    full = rng.standard_normal(size=(3, max_seq_len, max_d_k))  # Q, K, V stacked: (3, T_max, d_k_max)
    q, k, v = full[:, :seq_len, :d_k]  # each (seq_len, d_k)
    return q, k, v


def row_entropy(weights: np.ndarray) -> np.ndarray:
    r"""Entropy of each attention row, in nats: :math:`H(p) = -\sum_j p_j \ln p_j` (with :math:`0 \ln 0 = 0`).

    ``weights`` ``(..., T_k)`` -> ``(...)``. A uniform row over :math:`T_k` keys has
    the maximum, :math:`\ln T_k`; a one-hot row (a saturated softmax) has 0.
    """
    p = as_float_array(weights, "weights", min_ndim=1)
    if np.any(p < 0):
        raise ValueError(f"weights of shape {p.shape} contain negative entries; they must be probabilities.")
    logp = np.log(p, where=p > 0, out=np.zeros_like(p))  # (..., T_k); 0 where p == 0
    return np.maximum(-(p * logp).sum(axis=-1), 0.0)  # (...); max() clears a -0.0


def softmax_jacobian(p: np.ndarray) -> np.ndarray:
    r"""The Jacobian of the softmax at output ``p``: :math:`J = \operatorname{diag}(p) - p\,p^\top`.

    .. math:: J_{ij} = \frac{\partial p_i}{\partial s_j} = p_i(\delta_{ij} - p_j)

    ``p`` ``(..., N)`` (rows of a softmax) -> ``J`` ``(..., N, N)``. The diagonal
    is computed as :math:`p_i(1 - p_i)`, which stays accurate when :math:`p_i \approx 1`.
    """
    p = as_float_array(p, "p", min_ndim=1)
    jac = -p[..., :, None] * p[..., None, :]  # (..., N, 1) * (..., 1, N) -> (..., N, N): -p p^T
    n = p.shape[-1]
    diag = np.arange(n)
    jac[..., diag, diag] = p * (1.0 - p)  # (..., N): p_i - p_i^2 without cancellation
    return jac


def softmax_jacobian_norm(p: np.ndarray) -> np.ndarray:
    r"""Frobenius norm of the softmax Jacobian for each row: :math:`\lVert \operatorname{diag}(p) - p p^\top \rVert_F`.

    ``p`` ``(..., N)`` -> ``(...)``, in :math:`O(N)` per row instead of building the
    ``(N, N)`` matrix:

    .. math::

        \lVert J \rVert_F^2 = \sum_i p_i^2 (1 - p_i)^2 + \sum_i p_i^2 \sum_{j \ne i} p_j^2 .

    A row spread evenly over :math:`m` keys gives :math:`\sqrt{m-1}/m` (at most 1/2, for
    :math:`m = 2`; :math:`\sqrt{N-1}/N` for a uniform row), and the norm tends to 0 as the row
    becomes one-hot: a saturated softmax passes back almost no gradient.
    """
    p = as_float_array(p, "p", min_ndim=1)
    p2 = p * p  # (..., N)
    top = np.argmax(p, axis=-1)[..., None]  # (..., 1): index of the largest weight
    # sum_{j != top} p_j^2, summed directly: "sum(p^2) - p_top^2" would cancel when the row is one-hot
    rest = p2.sum(axis=-1, keepdims=True) - p2  # (..., N): sum_{j != i} p_j^2, accurate for i != top
    not_top = np.where(np.arange(p.shape[-1]) == top, 0.0, p2)  # (..., N): p^2 with the top entry zeroed
    np.put_along_axis(rest, top, not_top.sum(axis=-1, keepdims=True), axis=-1)  # exact for i == top
    diag = p * (1.0 - p)  # (..., N): J_ii = p_i - p_i^2 without cancellation
    return np.sqrt(np.sum(diag * diag + p2 * rest, axis=-1))  # (...)


@dataclass(frozen=True)
class WeightStats:
    """Row statistics of attention weights, averaged over all rows."""

    max_weight: float  #: mean of each row's largest weight (1/T_k uniform ... 1 one-hot)
    entropy: float  #: mean row entropy in nats (ln T_k uniform ... 0 one-hot)
    jacobian_norm: float  #: mean Frobenius norm of the softmax Jacobian per row


def weight_stats(weights: np.ndarray) -> WeightStats:
    """Mean largest weight, entropy and softmax-Jacobian norm over every row of ``weights`` ``(..., T_k)``."""
    p = as_float_array(weights, "weights", min_ndim=1)
    return WeightStats(
        max_weight=float(p.max(axis=-1).mean()),
        entropy=float(row_entropy(p).mean()),
        jacobian_norm=float(softmax_jacobian_norm(p).mean()),
    )


@dataclass(frozen=True)
class ScalingExample:
    """One head at one setting of the lab: random Q, K, V, the scores the softmax sees, and what it makes of them."""

    Q: np.ndarray  #: (T, d_k) standard-normal queries
    K: np.ndarray  #: (T, d_k) keys
    V: np.ndarray  #: (T, d_k) values
    scaled: bool  #: whether the scores were divided by √d_k
    scores: np.ndarray  #: (T, T) the softmax's input: QKᵀ/√d_k, or QKᵀ unscaled
    weights: np.ndarray  #: (T, T) softmax(scores), one row per query
    output: np.ndarray  #: (T, d_k) weights @ V
    stats: WeightStats  #: how saturated the rows are


def scaling_example(seq_len: int, d_k: int, seed: int = 0, *, scaled: bool = True, max_seq_len: int = 32,
                    max_d_k: int = POWERS_OF_TWO_D_K[-1]) -> ScalingExample:
    r"""Attention over `random_qkv` with or without the :math:`1/\sqrt{d_k}`: the lab's current setting."""
    Q, K, V = random_qkv(seq_len, d_k, seed, max_seq_len=max_seq_len, max_d_k=max_d_k)
    scale = 1.0 / np.sqrt(d_k) if scaled else 1.0
    output, weights = scaled_dot_product_attention(Q, K, V, scale=scale)
    scores = (Q @ K.T) * scale  # (T, d_k) @ (d_k, T) -> (T, T), as scaled_dot_product_attention scales them
    return ScalingExample(Q=Q, K=K, V=V, scaled=scaled, scores=scores, weights=weights, output=output,
                          stats=weight_stats(weights))


@dataclass(frozen=True)
class ScoreSweep:
    """Score and softmax statistics against ``d_k``, unscaled and scaled (arrays of shape ``(n_d_k,)``, read-only).

    ``*_raw`` use the scores :math:`QK^\\top`; ``*_scaled`` use :math:`QK^\\top/\\sqrt{d_k}`.
    Each value is a mean over ``n_samples`` independent ``(seq_len, seq_len)`` score
    matrices (the variances are over all their entries).
    """

    d_k: np.ndarray
    seq_len: int
    n_samples: int
    var_raw: np.ndarray
    var_scaled: np.ndarray
    max_weight_raw: np.ndarray
    max_weight_scaled: np.ndarray
    entropy_raw: np.ndarray
    entropy_scaled: np.ndarray
    jacobian_norm_raw: np.ndarray
    jacobian_norm_scaled: np.ndarray


def score_sweep(
    seq_len: int,
    seed: int = 0,
    d_ks: Sequence[int] = POWERS_OF_TWO_D_K,
    n_rows: int = 512,
) -> ScoreSweep:
    r"""Measure how the scores and the softmax behave as :math:`d_k` grows, with and without scaling.

    Draws ``n_samples = ceil(n_rows / seq_len)`` independent standard-normal
    :math:`Q, K` of shape ``(seq_len, max(d_ks))``; width :math:`d_k` uses their first
    :math:`d_k` columns. The columns are drawn block by block and the scores built up as

    .. math:: S^{(d)} = S^{(d')} + Q_{:, d':d}\, K_{:, d':d}^\top \quad (d' < d \text{ the previous width}),

    so the whole sweep costs one full-width matrix product. For each :math:`d_k` it
    reports the variance of the scores (expected :math:`d_k` raw, 1 scaled) and the
    mean largest weight, row entropy and softmax-Jacobian norm of
    :math:`\operatorname{softmax}(S)` and :math:`\operatorname{softmax}(S/\sqrt{d_k})`.

    Args:
        seq_len: tokens per sample, T (each row is a softmax over T keys).
        seed: seeds the random draws.
        d_ks: strictly increasing positive key widths.
        n_rows: about how many query rows to average over, in total.
    """
    seq_len = positive_int(seq_len, "seq_len")
    n_rows = positive_int(n_rows, "n_rows")
    d = np.asarray(d_ks)
    if d.ndim != 1 or d.size == 0 or not np.issubdtype(d.dtype, np.integer) or d[0] < 1 or np.any(np.diff(d) <= 0):
        raise ValueError(f"d_ks must be a non-empty, strictly increasing list of positive integers, got {list(d_ks)}.")
    n_samples = -(-n_rows // seq_len)  # ceil(n_rows / seq_len)
    rng = np.random.default_rng([seed, _SWEEP_STREAM])

    stats: dict[str, list[float]] = {name: [] for name in (
        "var_raw", "var_scaled", "max_weight_raw", "max_weight_scaled",
        "entropy_raw", "entropy_scaled", "jacobian_norm_raw", "jacobian_norm_scaled")}
    scores = np.zeros((n_samples, seq_len, seq_len))  # (S, T, T), the running Q K^T
    prev = 0
    for d_k in d.tolist():
        q_new = rng.standard_normal(size=(n_samples, seq_len, d_k - prev))  # (S, T, d_k - prev): new columns of Q
        # K's new columns are drawn already transposed, (S, d_k - prev, T): a contiguous batched matmul is
        # far cheaper in NumPy than one on a swapaxes view (docs/performance.md), and i.i.d. normals do not
        # care about the layout.
        k_new_t = rng.standard_normal(size=(n_samples, d_k - prev, seq_len))  # (S, d_k - prev, T)
        scores += q_new @ k_new_t  # (S, T, d_k - prev) @ (S, d_k - prev, T) -> (S, T, T)
        prev = d_k
        for suffix, s in (("raw", scores), ("scaled", scores / np.sqrt(d_k))):
            w = weight_stats(softmax(s, axis=-1))  # softmax over the keys: (S, T, T)
            stats[f"var_{suffix}"].append(float(s.var()))
            stats[f"max_weight_{suffix}"].append(w.max_weight)
            stats[f"entropy_{suffix}"].append(w.entropy)
            stats[f"jacobian_norm_{suffix}"].append(w.jacobian_norm)

    arrays = {name: np.array(vals) for name, vals in stats.items()}
    d_arr = d.astype(np.int64)
    for a in (d_arr, *arrays.values()):
        a.setflags(write=False)
    return ScoreSweep(d_k=d_arr, seq_len=seq_len, n_samples=n_samples, **arrays)
