r"""Tooltip lines that show the arithmetic behind a cell of an attention map.

Hovering a weight should answer "where does this number come from?" with the
lesson's own steps:

.. math::

    s_{ij} = \frac{q_i \cdot k_j}{\sqrt{d_k}},\qquad
    A_{ij} = \frac{e^{s_{ij} + M_{ij}}}{\sum_{j'} e^{s_{ij'} + M_{ij'}}}

and hovering an output should show the weighted sum of values that produced it.
Each function returns ``{tooltip title: array of the map's shape}``, ready for the
``extra=`` argument of `ui.charts.heatmap` (and of the masked maps in
`ui.charts.masked_attention`). Pure NumPy: no Streamlit, no Altair, no PyTorch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def cell_texts(template: str, *values: np.ndarray) -> np.ndarray:
    """Each cell's text, ``template % (values[0][cell], values[1][cell], …)``, as an object array of the cells'
    shape (the arrays broadcast together): the same text as formatting cell by cell, made by one ``%`` over the
    whole map."""
    arrays = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in values))
    flat = tuple(np.stack(arrays, axis=-1).ravel().tolist())  # cell by cell, each cell's values in order
    texts = ((template + "\0") * arrays[0].size % flat).split("\0")[:-1]
    return np.array(texts, dtype=object).reshape(arrays[0].shape)


def _fmt(values: np.ndarray, spec: str = ".4g") -> np.ndarray:
    """Numbers as text (object array): ``.4g`` reads well from 1e-30 to 1e30, where a fixed format would not."""
    return np.vectorize(lambda x: format(x, spec), otypes=[object])(values)


def softmax_tooltips(
    Q: np.ndarray,
    K: np.ndarray,
    *,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    mask: np.ndarray | None = None,
    scaled: bool = True,
    stable: bool = False,
) -> dict[str, np.ndarray]:
    """How every weight of ``softmax(Q Kᵀ / √d_k + M)`` was computed, one tooltip line per step.

    Args:
        Q, K: ``(T_q, d_k)`` queries and ``(T_k, d_k)`` keys.
        row_labels, col_labels: the query and key tokens, to say in words why a masked weight is 0.
        mask: ``(T_q, T_k)`` booleans, True where attending is allowed; adds the line ``M_ij`` (0 or −∞).
        scaled: divide by √d_k (False: the raw scores go into the softmax).
        stable: subtract each row's largest score before ``exp`` (as every real softmax does). The weights do
            not change, but ``exp`` stays finite, which matters for large unscaled scores. Off by default, so
            the numbers are the formula's own.
    """
    d_k = Q.shape[-1]
    raw = Q @ K.T  # (T_q, d_k) @ (d_k, T_k) -> (T_q, T_k)
    visible = np.ones(raw.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    if visible.shape != raw.shape:
        raise ValueError(f"mask of shape {visible.shape} for scores of shape {raw.shape}.")
    if scaled:
        score, name = raw / np.sqrt(d_k), "scaled"
        lines: dict[str, np.ndarray] = {"raw score q_i · k_j": raw, f"scaled score q_i · k_j / √{d_k}": score}
    else:
        score, name = raw, "score"
        lines = {"score q_i · k_j (not scaled)": raw}
    exponent = np.where(visible, score, -np.inf)  # s + M, with M = 0 or −∞
    if mask is not None:
        lines["mask M_ij"] = np.where(visible, "0", "−∞").astype(object)
        name += " + M"
    if stable:
        exponent = exponent - np.max(exponent, axis=1, keepdims=True)
        name += " − row max"
    with np.errstate(over="ignore", invalid="ignore"):  # without `stable`, huge scores honestly give inf (and nan)
        exps = np.exp(exponent)  # e^(−∞) = 0 exactly
        row_sum = np.broadcast_to(exps.sum(axis=1, keepdims=True), exps.shape)
        share = exps / row_sum
    how = np.empty(raw.shape, dtype=object)
    for i, j in np.ndindex(raw.shape):
        how[i, j] = (f"{exps[i, j]:.4g} / {row_sum[i, j]:.4g} = {share[i, j]:.4f}" if visible[i, j]
                     else f"exactly 0: “{col_labels[j]}” comes after “{row_labels[i]}”, so M = −∞ and e^(−∞) = 0")
    lines[f"exp({name})"] = _fmt(exps)
    lines["row sum of exp"] = _fmt(row_sum)
    lines["A_ij = exp / row sum"] = how
    return lines


def weighted_sum_tooltips(weights: np.ndarray, V: np.ndarray) -> dict[str, np.ndarray]:
    """How every output entry ``(A V)_id = Σ_j A_ij V_jd`` was computed: the sum written out, term by term."""
    n_q, n_k = weights.shape
    d_v = V.shape[1]
    sums = np.empty((n_q, d_v), dtype=object)
    for i, d in np.ndindex(n_q, d_v):
        sums[i, d] = " + ".join(f"{weights[i, j]:.3f}×{V[j, d]:.3f}" for j in range(n_k))
    return {"Σ_j A_ij · V_jd": sums}
