"""The masked-attention page's charts: the causal mask, the scores with −∞ drawn as grey cells, and one
query's weights with and without the mask."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import numpy as np

from core.masking import MaskedAttention
from ui.charts.arrange import independent_colours, side_by_side
from ui.charts.heatmap import (
    DIVERGING_SCHEME,
    Columns,
    colour_scale,
    emphasis_encoding,
    extra_tooltip_lines,
    heatmap_part,
    matrix_columns,
)
from ui.charts.inline_data import Rows
from ui.charts.palette import BAND_TINT, BLUE, REFERENCE_GREY, VERMILLION, ink, ink_on
from ui.charts.raster import default_domain
from ui.charts.template import DataSource, Make, chart_of, compose, part_builder, part_spec
from ui.charts.tooltips import softmax_tooltips

#: A masked score's cell (−∞): a neutral grey, not a colour of the scores' scale.
MASKED_GREY = REFERENCE_GREY
#: "may attend" / "masked" colours of the mask: blue, and the grey of a masked score.
MASK_COLOURS = (BLUE, MASKED_GREY)
#: Bars of keys a query may see, and of future keys (no mask: the weight that would leak).
SEEN_COLOUR, FUTURE_COLOUR = BLUE, VERMILLION


def mask_chart(mask: np.ndarray, labels: Sequence[str], **options: Any) -> alt.LayerChart:
    """`mask_part` as an Altair chart, its data inline."""
    return chart_of(mask_part(mask, labels, **options))


@part_builder()
def mask_part(
    mask: np.ndarray,
    labels: Sequence[str],
    *,
    title: str = "mask",
    cell_size: int = 36,
    font_size: int = 12,
    extra: Mapping[str, np.ndarray] | None = None,
    highlight_rows: Sequence[int] | None = None,
    highlight_cols: Sequence[int] | None = None,
) -> tuple[list[Rows], Make]:
    """The boolean mask as a two-colour grid, "may attend" (1) or "masked" (0), with 1/0 in the cells.

    `extra`, `highlight_rows` and `highlight_cols` work as in `ui.charts.heatmap`.
    """
    m = np.asarray(mask)
    if m.dtype != np.bool_ or m.ndim != 2:
        raise ValueError(f"mask must be a 2-D boolean matrix, got dtype {m.dtype} and shape {m.shape}.")
    columns = matrix_columns(m.astype(np.float64), labels, labels)
    columns["state"] = np.where(m.ravel(), "may attend", "masked")
    columns["ink"] = np.where(m.ravel(), ink_on(MASK_COLOURS[0]), ink_on(MASK_COLOURS[1]))
    extra_lines = extra_tooltip_lines(columns, extra, m.shape, ".3f")
    emphasis = emphasis_encoding(columns, highlight_rows, highlight_cols)
    table = Rows(columns)

    def make(data: DataSource) -> alt.LayerChart:
        x = alt.X(field="col", type="ordinal", sort=None, title="key token (attended to)",
                  axis=alt.Axis(labelAngle=-45 if cell_size >= 30 else -90, orient="top",
                                labelOverlap=False))
        y = alt.Y(field="row", type="ordinal", sort=None, title="query token")
        color = alt.Color(field="state", type="nominal", title=None,
                          scale=alt.Scale(domain=["may attend", "masked"], range=list(MASK_COLOURS)),
                          legend=alt.Legend(orient="bottom"))
        tooltip = [alt.Tooltip(field="row", type="nominal", title="query"),
                   alt.Tooltip(field="col", type="nominal", title="key"),
                   alt.Tooltip(field="state", type="nominal", title="mask"), *extra_lines]
        rect = alt.Chart().mark_rect(stroke="white", strokeWidth=2 if emphasis else 1).encode(color=color, **emphasis)
        text = alt.Chart().mark_text(fontSize=font_size).encode(
            text=alt.Text(field="value", type="quantitative", format="d"),
            color=alt.Color(field="ink", type="nominal", scale=None),  # the column holds the colours themselves
        )
        # One constructor call: chained `.encode().properties()` deep-copies the chart at each step.
        return alt.LayerChart(layer=[rect, text], data=data(), title=title or alt.Undefined,
                              encoding=alt.FacetedEncoding(x=x, y=y, tooltip=tooltip),
                              width=alt.Step(cell_size), height=alt.Step(cell_size))

    return [table], make


def masked_heatmap(matrix: np.ndarray, labels: Sequence[str], **options: Any) -> alt.LayerChart:
    """`masked_heatmap_part` as an Altair chart, its data inline."""
    return chart_of(masked_heatmap_part(matrix, labels, **options))


@part_builder()
def masked_heatmap_part(
    matrix: np.ndarray,
    labels: Sequence[str],
    *,
    title: str = "",
    x_title: str = "key token (attended to)",
    y_title: str = "query token",
    value_format: str = ".3f",
    cell_size: int = 44,
    font_size: int = 12,
    show_values: bool = True,
    extra: Mapping[str, np.ndarray] | None = None,
    highlight_rows: Sequence[int] | None = None,
    highlight_cols: Sequence[int] | None = None,
) -> tuple[list[Rows], Make]:
    """A signed heatmap in which ``-inf`` cells are grey and read "−∞" (a colour scale cannot hold -inf).

    The data keep the true ``value`` (``-inf`` included; Streamlit sends it to the
    browser as null), so the colour uses a finite copy ``shade`` and the text a ``label``.
    `extra`, `highlight_rows` and `highlight_cols` work as in `ui.charts.heatmap`.
    """
    columns = masked_columns(matrix, labels, value_format)
    extra_lines = extra_tooltip_lines(columns, extra, np.shape(matrix), value_format)
    emphasis = emphasis_encoding(columns, highlight_rows, highlight_cols)
    table = Rows(columns)

    def make(data: DataSource) -> alt.LayerChart:
        x = alt.X(field="col", type="ordinal", sort=None, title=x_title,
                  axis=alt.Axis(labelAngle=-45, orient="top", labelOverlap=False))
        y = alt.Y(field="row", type="ordinal", sort=None, title=y_title)
        tooltip = [alt.Tooltip(field="row", type="nominal", title=y_title),
                   alt.Tooltip(field="col", type="nominal", title=x_title),
                   alt.Tooltip(field="label", type="nominal", title="value"), *extra_lines]
        rect = alt.Chart().mark_rect(stroke="white", strokeWidth=2 if emphasis else 1).encode(
            color=alt.condition("datum.masked", alt.value(MASKED_GREY),
                                alt.Color(field="shade", type="quantitative", scale=colour_scale(True), title=None,
                                          legend=alt.Legend(orient="right"))),
            **emphasis,
        )
        layers: list[alt.Chart] = [rect]
        if show_values:
            layers.append(alt.Chart().mark_text(fontSize=font_size).encode(
                text=alt.Text(field="label", type="nominal"),
                color=alt.Color(field="ink", type="nominal", scale=None),  # the column holds the colours themselves
            ))
        return alt.LayerChart(layer=layers, data=data(), title=title or alt.Undefined,
                              encoding=alt.FacetedEncoding(x=x, y=y, tooltip=tooltip),
                              resolve=independent_colours(),  # the cells' colour scale is not the text's ink
                              width=alt.Step(cell_size), height=alt.Step(cell_size))

    return [table], make


def masked_columns(matrix: np.ndarray, labels: Sequence[str], value_format: str) -> Columns:
    """`matrix_columns` of a matrix of finite values and ``-inf``, with what its cells draw: ``masked``, a finite
    ``shade`` for the colour (0 where masked), the ``label`` printed ("−∞" where masked), the ``ink`` that reads on
    the cell, and the colour domain ``lo``, ``hi`` (read by `domain_from_data`)."""
    columns = matrix_columns(matrix, labels, labels)
    v = columns["value"]
    masked = np.isneginf(v)
    if np.isnan(v).any() or np.isposinf(v).any():
        raise ValueError(f"masked_heatmap accepts finite values and -inf only (shape {np.shape(matrix)}).")
    lo, hi = default_domain(v, signed=True)
    columns["masked"] = masked
    columns["shade"] = np.where(masked, 0.0, v)
    columns["label"] = [("−∞" if mk else format(x, value_format)) for x, mk in zip(v, masked, strict=True)]
    on_scale = ink(DIVERGING_SCHEME, (columns["shade"] - lo) / (hi - lo))  # black or white, as it reads better
    columns["ink"] = np.where(masked, ink_on(MASKED_GREY), on_scale)
    columns["lo"], columns["hi"] = np.full(v.size, lo), np.full(v.size, hi)
    return columns


def step_bars(rows: dict[str, np.ndarray], labels: Sequence[str], step: int, **options: Any) -> alt.HConcatChart:
    """`step_bars_part` as an Altair chart, its data inline."""
    return chart_of(step_bars_part(rows, labels, step, **options))


@part_builder()
def step_bars_part(
    rows: dict[str, np.ndarray],
    labels: Sequence[str],
    step: int,
    *,
    bar_size: int = 40,
    height: int = 200,
) -> tuple[list[Rows], Make]:
    """One query's weight row per panel (`rows`: panel title -> ``(T,)`` weights), future keys shaded grey.

    Keys ``j <= step - 1`` (0-based) are the ones token `step` can see; later keys
    sit on a grey background. The weight is printed above every bar.
    """
    n = len(labels)
    tables = []
    for panel_title, row in rows.items():
        row = np.asarray(row, dtype=np.float64)
        if row.shape != (n,):
            raise ValueError(f"panel {panel_title!r}: a weight row of shape {row.shape} for {n} labels.")
        tables.append(Rows({
            "key": np.asarray(list(labels), dtype=object), "j": np.arange(n), "weight": row,
            "status": np.where(np.arange(n) < step, "visible (j ≤ t)", "future (j > t)").astype(object),
            "label": np.asarray([format(w, ".3f") for w in row], dtype=object),
        }))

    def make(data: DataSource) -> alt.HConcatChart:
        x = alt.X(field="key", type="ordinal", sort=list(labels), title="key token",
                  axis=alt.Axis(labelAngle=-45, labelOverlap=False))
        y = alt.Y(field="weight", type="quantitative", title="attention weight", scale=alt.Scale(domain=[0, 1]))
        tooltip = [alt.Tooltip(field="key", type="nominal", title="key"),
                   alt.Tooltip(field="weight", type="quantitative", title="weight", format=".4f"),
                   alt.Tooltip(field="status", type="nominal", title="key is")]
        panels = []
        for panel_title in rows:
            shade = alt.Chart().transform_filter("datum.j >= " + str(step)).mark_bar(
                color=BAND_TINT, width=alt.RelativeBandSize(1.0)).encode(x=x, y=alt.Y(datum=1), tooltip=tooltip)
            bars = alt.Chart().mark_bar().encode(
                x=x, y=y, tooltip=tooltip,
                color=alt.Color(field="status", type="nominal", title=None,
                                scale=alt.Scale(domain=["visible (j ≤ t)", "future (j > t)"],
                                                range=[SEEN_COLOUR, FUTURE_COLOUR]),
                                legend=alt.Legend(orient="bottom")),
            )
            text = alt.Chart().mark_text(dy=-7, fontSize=11).encode(x=x, y=y,
                                                                    text=alt.Text(field="label", type="nominal"))
            panels.append(alt.layer(shade, bars, text, data=data(), title=panel_title)
                          .properties(width=alt.Step(bar_size), height=height))
        return alt.hconcat(*panels, spacing=28)

    return tables, make


def page_specs(attention: MaskedAttention, labels: Sequence[str],
               cell: tuple[int, int] | None = None) -> dict[str, dict]:
    """The mask and score maps ("maps") and the weights ("weights") as Vega-Lite specs.

    `cell` is the clicked weight (query, key); its query's row is highlighted in the mask and the scores.
    """
    seq_len = len(labels)
    font, big, small = (12, 44, 32) if seq_len <= 8 else (10, 36, 24)
    steps = softmax_tooltips(attention.Q, attention.K, mask=attention.mask, row_labels=labels, col_labels=labels)
    mask_why = np.array([["may attend: key at or before the query" if attention.mask[i, j] else
                          f"masked: “{labels[j]}” is not written yet when “{labels[i]}” is produced"
                          for j in range(seq_len)] for i in range(seq_len)], dtype=object)
    row = None if cell is None else [cell[0]]  # the softmax that made A_ij normalises row i
    mask_map = mask_part(attention.mask, labels, title="mask (1 = may attend)", cell_size=small, font_size=font,
                          extra={"why": mask_why}, highlight_rows=row)
    score_lines = {k: v for k, v in steps.items() if k.startswith(("raw", "scaled", "mask"))}
    score_map = masked_heatmap_part(attention.masked_scores, labels, title="scaled scores QKᵀ/√d_k + M", cell_size=big,
                               font_size=font, value_format=".2f", extra=score_lines, highlight_rows=row)
    key_title = "key token (attended to)"
    # Slanted key labels, as on the charts above (repeated words carry their position and run long).
    weights = heatmap_part(attention.weights, row_labels=labels, col_labels=labels, signed=False, cell_size=big,
                           font_size=font, title="attention weights A", x_title=key_title, y_title="query token",
                           select="cell", extra=steps, slanted_x_labels=True)
    return {"maps": part_spec(compose(side_by_side, mask_map, score_map), canvas=True),
            "weights": part_spec(weights, canvas=True)}


def step_spec(unmasked: MaskedAttention, masked: MaskedAttention, labels: Sequence[str], words: Sequence[str],
              step: int) -> dict:
    """At generation step `step` (that many tokens exist), the newest token's weights, at position t = step − 1,
    without and with the causal mask, as one Vega-Lite spec."""
    t = step - 1
    bars = step_bars_part({f"no mask: token at position {t} (“{words[t]}”)": unmasked.weights[t],
                      f"causal mask: token at position {t} (“{words[t]}”)": masked.weights[t]}, labels, step,
                     bar_size=40 if len(labels) <= 8 else 36)
    return part_spec(bars, canvas=True)
