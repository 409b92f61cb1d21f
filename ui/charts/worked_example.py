"""The worked example's charts: X, the projections, the scores, the weights and the output, one chart at a time."""

from __future__ import annotations

import numpy as np

from core import WorkedExample
from ui.charts.arrange import grid, side_by_side
from ui.charts.heatmap import heatmap_part, unique_labels
from ui.charts.template import compose, part_spec
from ui.charts.tooltips import softmax_tooltips, weighted_sum_tooltips

#: The page's charts, in the order they are drawn (`chart_spec`).
CHARTS = ("X", "projections", "raw scores", "scores", "weights", "output")
#: Charts drawn on a canvas (`ui.charts.spec.CANVAS`): SVG charts updating their cells and labels in place cost more
#: of a slider step than repainting canvases (docs/performance.md). The output, the page's
#: result, stays SVG: its numbers stay in the page as text, selectable and read cell by cell by a screen reader
#: (and by the browser tests).
CANVAS_CHARTS = ("X", "projections", "raw scores", "scores", "weights")


def chart_spec(name: str, ex: WorkedExample, cell: tuple[int, int] | None = None) -> dict:
    """One of the page's `CHARTS` as a Vega-Lite spec; `cell` (query, key) highlights that query and key in Q and K."""
    labels = unique_labels(ex.tokens)
    n_tokens, d_model = ex.X.shape
    dims = [f"d{j}" for j in range(d_model)]
    qkv_kw = dict(row_labels=labels, col_labels=dims, x_title="dim", y_title="token")
    score_kw = dict(row_labels=labels, col_labels=labels, x_title="key token", y_title="query token")
    if name == "X":
        chart = heatmap_part(ex.X, row_labels=labels, col_labels=dims, title="X", x_title="embedding dim",
                             y_title="token")
    elif name == "projections":
        w_kw = dict(row_labels=dims, col_labels=dims, x_title="out dim", y_title="in dim", value_format=".1f")
        q_row, k_row = (None, None) if cell is None else ([cell[0]], [cell[1]])
        chart = compose(grid, heatmap_part(ex.W_q, title="W_q", **w_kw), heatmap_part(ex.W_k, title="W_k", **w_kw),
                     heatmap_part(ex.W_v, title="W_v", **w_kw),
                     heatmap_part(ex.Q, title="Q", highlight_rows=q_row, **qkv_kw),
                     heatmap_part(ex.K, title="K", highlight_rows=k_row, **qkv_kw),
                     heatmap_part(ex.V, title="V", **qkv_kw), columns=3)
    elif name in ("raw scores", "scores"):
        products = np.array([[" + ".join(f"{a:.2f}×{b:.2f}" for a, b in zip(ex.Q[i], ex.K[j], strict=True))
                              for j in range(n_tokens)] for i in range(n_tokens)], dtype=object)
        scores_max = float(np.abs(ex.raw_scores).max()) or 1.0
        raw = heatmap_part(ex.raw_scores, title="raw scores Q Kᵀ", domain=(-scores_max, scores_max),
                      extra={"q_i · k_j": products}, **score_kw)
        if name == "raw scores":
            chart = compose(side_by_side, raw, shared_color=True)
        else:
            scaled = heatmap_part(ex.scaled_scores, title=f"scaled scores Q Kᵀ / √{ex.d_k}",
                             domain=(-scores_max, scores_max), **score_kw)
            chart = compose(side_by_side, raw, scaled, shared_color=True)
    elif name == "weights":
        chart = heatmap_part(ex.weights, signed=False, title="attention weights A", select="cell",
                        extra=softmax_tooltips(ex.Q, ex.K, row_labels=labels, col_labels=labels), **score_kw)
    elif name == "output":
        chart = heatmap_part(ex.output, title="output = A V", extra=weighted_sum_tooltips(ex.weights, ex.V), **qkv_kw)
    else:
        raise ValueError(f"unknown chart {name!r}; the page's charts are {CHARTS}.")
    return part_spec(chart, canvas=name in CANVAS_CHARTS)
