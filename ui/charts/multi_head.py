"""The multi-head page's charts: Q, K and V cut into heads, one map per head, the concatenation and W_o."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.multihead_steps import MultiHeadSteps
from ui.charts.facets import (
    HEAD_GAP,
    HEAD_GAP_MANY,
    facets_side_by_side,
    head_blocks_part,
    head_maps_part,
    matrix_panels_part,
)
from ui.charts.template import compose, part_spec


def clamp(value: float, lo: int, hi: int) -> int:
    return int(max(lo, min(hi, value)))


def page_specs(steps: MultiHeadSteps, tokens: Sequence[str], W_o: np.ndarray,
               cell: tuple[int, ...] | None = None) -> dict[str, dict]:
    """Every chart of the page as a Vega-Lite spec: Q, K and V cut into heads ("qkv"), the maps ("maps"), the
    concatenation ("concat"), W_o and the output ("mix").

    Cell sizes follow the shape, so the charts keep about the same width on screen: Q/K/V and the
    concatenation fill ~820 px whatever d_model, the maps wrap after 8 heads. `cell` is the clicked
    weight ``(head, query, key)``: its query row and key row are highlighted in that head's block of Q and K.

    Q, K and V print numbers only in those two highlighted rows (the ones whose dot product the caption
    works out); otherwise their colours show the split and a hover gives any value. The 288 values they
    printed at the defaults were re-laid-out and redrawn on every slider step (see docs/performance.md).
    """
    n_heads, seq_len, d_model = steps.n_heads, len(tokens), steps.q.shape[1]
    split_gap = HEAD_GAP_MANY if n_heads > 16 else HEAD_GAP
    block_cell = clamp((820 - (n_heads - 1) * split_gap) / d_model, 8, 36)
    map_columns = min(n_heads, 8)
    map_cell = clamp((960 / map_columns - 70) / seq_len, 5, 40)
    mix_cell = clamp(340 / d_model, 5, 28)
    dims = [str(j) for j in range(d_model)]
    mix_kw = dict(x_title="output dim", cell_size=mix_cell, value_format=".2f", font_size=9, show_values=d_model <= 8)
    tokens = list(tokens)
    charts = {
        "qkv": head_blocks_part({"Q": steps.q, "K": steps.k, "V": steps.v}, n_heads, row_labels=tokens,
                           cell_size=block_cell, show_values="highlighted",
                           highlight=None if cell is None else {"Q": (cell[1], cell[0]), "K": (cell[2], cell[0])}),
        "maps": head_maps_part(steps.weights, tokens, columns=map_columns, cell_size=map_cell, select="cell"),
        "concat": head_blocks_part({"Concat(heads)": steps.concat}, n_heads, row_labels=tokens, cell_size=block_cell),
        "mix": compose(
            facets_side_by_side,
            matrix_panels_part([("W_o", W_o, dims, dims)], y_title="concat dim", **mix_kw),
            matrix_panels_part([("output = Concat · W_o", steps.output, tokens, dims)], y_title="token", **mix_kw),
        ),
    }
    return {name: part_spec(chart) for name, chart in charts.items()}
