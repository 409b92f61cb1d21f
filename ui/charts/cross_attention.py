"""The encoder–decoder page's charts: the two self-attention maps and the cross-attention map."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.encoder_decoder import AttentionBlock, EncoderDecoderAttention
from ui.charts.arrange import one_above_other, side_by_side
from ui.charts.heatmap import heatmap_part, unique_labels
from ui.charts.template import compose, part_spec
from ui.charts.tooltips import softmax_tooltips


def cell_style(n: int) -> dict:
    """Heatmap cell size and font for an n-token axis, so 12 x 12 maps still fit side by side."""
    if n <= 6:
        return dict(cell_size=44, font_size=12)
    if n <= 9:
        return dict(cell_size=36, font_size=11)
    return dict(cell_size=30, font_size=10)


def approx_width(labels: list[str], cell_size: int) -> int:
    """Rough pixel width of a square heatmap: its cells plus the row labels and the axis title."""
    return len(labels) * cell_size + 6 * max(len(lab) for lab in labels) + 40


def softmax_steps(block: AttentionBlock, row_labels: Sequence[str], col_labels: Sequence[str]) -> dict[str, np.ndarray]:
    """How every weight of `block` was computed (tooltip lines); the mask line only for the masked decoder."""
    return softmax_tooltips(block.Q, block.K, mask=block.mask, row_labels=row_labels, col_labels=col_labels)


def page_specs(r: EncoderDecoderAttention, cell: tuple[int, int] | None = None) -> dict[str, dict]:
    """The two self-attention maps ("self", one chart) and the cross-attention map ("cross") as Vega-Lite specs.

    `cell` is the clicked cross-attention weight (target t, source s): the decoder map highlights row t (it made
    the decoder state H_t that asks the query) and the encoder map row s (it made the memory row M_s that
    gives the key and the value).
    """
    src_labels, tgt_labels = unique_labels(r.src_tokens), unique_labels(r.tgt_tokens)
    enc_kw = dict(row_labels=src_labels, col_labels=src_labels, **cell_style(len(src_labels)))
    dec_kw = dict(row_labels=tgt_labels, col_labels=tgt_labels, **cell_style(len(tgt_labels)))
    t_row, s_row = (None, None) if cell is None else ([cell[0]], [cell[1]])
    enc_map = heatmap_part(r.encoder.weights, signed=False, title="encoder self-attention (source × source)",
                      x_title="key: source token", y_title="query: source token", value_format=".2f",
                      extra=softmax_steps(r.encoder, src_labels, src_labels), highlight_rows=s_row, **enc_kw)
    dec_map = heatmap_part(r.decoder.weights, signed=False, title="decoder masked self-attention (target × target)",
                      x_title="key: target token", y_title="query: target token", value_format=".2f",
                      extra=softmax_steps(r.decoder, tgt_labels, tgt_labels), highlight_rows=t_row, **dec_kw)
    # Side by side when both fit the page's width, one above the other when they do not.
    if approx_width(src_labels, enc_kw["cell_size"]) + approx_width(tgt_labels, dec_kw["cell_size"]) <= 860:
        self_maps = compose(side_by_side, enc_map, dec_map, shared_color=True, spacing=48)
    else:
        self_maps = compose(one_above_other, enc_map, dec_map, shared_color=True, spacing=36)
    cross_map = heatmap_part(r.cross.weights, row_labels=tgt_labels, col_labels=src_labels, signed=False,
                        title=f"cross-attention ({len(tgt_labels)} target queries × {len(src_labels)} source keys)",
                        x_title="key / value: source token (encoder)", y_title="query: target token (decoder)",
                        value_format=".2f", select="cell", extra=softmax_steps(r.cross, tgt_labels, src_labels),
                        **cell_style(max(len(src_labels), len(tgt_labels))))
    return {"self": part_spec(self_maps, canvas=True), "cross": part_spec(cross_map, canvas=True)}
