"""Faceted heatmaps for the multi-head and permutation pages.

`head_blocks`: matrices cut into one block of columns per head; `head_maps`: one attention
map per head; `matrix_panels`: same-shaped matrices side by side, each with its own label
order (a matrix next to its reordering). Pure functions (no Streamlit), tested through
``chart.to_dict()``. Each returns ONE faceted chart, so any number of heads or panels costs
one ``show_chart`` call, and all panels share one colour scale. Colours follow `ui.charts.heatmap`:
diverging centred at 0 for signed values, viridis on [0, 1] for weights.

Built to stay fast at the heavy end of the sliders (64 heads x 16 x 16 = 16 384 cells), from the parts in
`ui.charts.facet_parts`:

* the data is just the cell values, one ``{"value": x}`` record per cell in row-major
  order; each cell's indices (from its record number), every label (token, head,
  dimension) and the text colour are computed in the browser by ``window``/``calculate``
  transforms indexing short label arrays, so no per-cell indices or strings are built,
  serialised or hashed in Python;
* the charts are built with constructors (every chained ``.encode()``/``.properties()``
  deep-copies the chart) and without Altair's per-object validation (`ui.display.prepare_altair`
  turns it off; the tests validate the finished spec);
* the value labels, a second layer, are only added when the cells are big enough.

Every chart records how its values make matrices in the spec's ``usermeta``
(`ui.export.matrix_layout`: the stack's shape, the titles and the labels, at most a few kB),
so the export menu offers each matrix (each head's map, each head's block of Q, K, V) as CSV
and LaTeX without any per-cell index in the data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import altair as alt
import numpy as np

from ui.charts.facet_parts import calculate, cell_index, cell_values, facet_chart, js_array, panel_cells
from ui.charts.heatmap import MAX_LABELLED_CELLS, colour_scale, unique_labels
from ui.charts.inline_data import Rows
from ui.charts.palette import DIVERGING_SCHEME, SEQUENTIAL_SCHEME, ink_expr
from ui.charts.spec import CANVAS
from ui.charts.template import DataSource, Make, chart_of, part_builder
from ui.export import LAYOUT_KEY, matrix_layout

#: Cells smaller than this (pixels) get no printed values.
MIN_LABELLED_CELL = 28
#: A cell's place on its colour scale, from 0 to 1, in Vega's expressions (the domain ``lo``, ``hi`` is data).
SCALE_POSITION = "((datum.value - datum.lo) / (datum.hi - datum.lo || 1))"
#: Pixels between the head blocks of `head_blocks` (fewer pixels when there are many heads).
HEAD_GAP, HEAD_GAP_MANY = 12, 3


def head_label(h: int, d_k: int, width_px: float) -> str:
    """Facet header for head `h` (0-based) owning columns ``h*d_k .. (h+1)*d_k - 1``, shortened to fit `width_px`."""
    lo, hi = h * d_k, (h + 1) * d_k - 1
    dims = f"dim {lo}" if lo == hi else f"dims {lo}–{hi}"
    if width_px >= 110:
        return f"head {h + 1} · {dims}"
    if width_px >= 44:
        return f"head {h + 1}"
    return str(h + 1)


def head_blocks(*args: Any, **options: Any) -> alt.FacetChart:
    """`head_blocks_part` as an Altair chart, its data inline."""
    return chart_of(head_blocks_part(*args, **options))


@part_builder()
def head_blocks_part(
    matrices: Mapping[str, np.ndarray],
    n_heads: int,
    *,
    row_labels: Sequence[str],
    title: str = "",
    y_title: str = "token",
    cell_size: int = 24,
    show_values: bool | Literal["highlighted"] | None = None,
    value_format: str = ".2f",
    font_size: int = 10,
    highlight: Mapping[str, tuple[int, int]] | None = None,
) -> tuple[list[Rows], Make]:
    """``(T, d_model)`` matrices (one facet row each) cut into `n_heads` blocks of ``d_k`` columns (facet columns).

    The gap between the blocks is the split: head ``h`` reads only the columns in its block.
    One colour scale, symmetric around 0, is shared by every panel. `highlight` maps a matrix name to
    ``(row, head)``: that row of that head's block stays bright and every other cell is faded.
    ``show_values="highlighted"`` prints the values of the bright cells only, and none without a
    highlight (cells smaller than `MIN_LABELLED_CELL` print none either way).

    Data: one ``value`` per cell, in the order of ``np.stack(matrices)``; the indices ``m`` (which
    matrix), ``t`` (token), ``j`` (dimension) and the labels ``matrix``, ``head``, ``row``, ``col``
    are computed in the browser. Exported: every matrix whole, and every head's block of it
    (``"Q · head 2 · dims 4–7"``).
    """
    names, stack, labels = _stacked_blocks(matrices, n_heads, row_labels)  # (n_matrices, T, d_model)
    d_k = stack.shape[2] // n_heads
    only_bright = show_values == "highlighted"
    if only_bright:
        show_values = bool(highlight) and cell_size >= MIN_LABELLED_CELL
    elif show_values is None:
        show_values = stack.size <= MAX_LABELLED_CELLS and cell_size >= MIN_LABELLED_CELL
    m = float(np.max(np.abs(stack))) or 1.0
    table = cell_values(stack, lo=-m, hi=m)["values"]

    def make(data: DataSource) -> alt.FacetChart:
        heads = [head_label(h, d_k, d_k * cell_size) for h in range(n_heads)]
        calc = dict(matrix=f"{js_array(names)}[datum.m]", row=f"{js_array(labels)}[datum.t]", col="'' + datum.j",
                    head=f"{js_array(heads)}[floor(datum.j / {d_k})]")
        if show_values:
            calc["ink"] = ink_expr(DIVERGING_SCHEME, SCALE_POSITION)
        emphasis = _bright_blocks(stack.shape, names, highlight, d_k, calc) if highlight else None
        cells = panel_cells(x=_dimension_axis(cell_size),
                            y=alt.Y(field="row", type="ordinal", sort=None, title=y_title),
                            color=alt.Color(field="value", type="quantitative", title=None, scale=colour_scale(True),
                                            legend=alt.Legend(orient="right")),
                            tooltip=_block_tooltip(y_title, value_format), cell_size=cell_size, emphasis=emphasis,
                            show_values=show_values, value_format=value_format, font_size=font_size,
                            values_where="datum.alpha == 1" if only_bright else None)
        transform = cell_index(stack.shape, ("m", "t", "j")) + calculate(**calc)
        layout = matrix_layout(stack.shape, names, labels, [str(j) for j in range(stack.shape[2])],
                               name=title or f"{', '.join(names)} by head",
                               blocks=(d_k, [head_label(h, d_k, width_px=np.inf) for h in range(n_heads)]))
        spacing = {"column": HEAD_GAP_MANY if n_heads > 16 else HEAD_GAP, "row": 8}
        return facet_chart(data(), transform, cells, _block_facets(names, heads, d_k * cell_size), title=title,
                           independent=("x",), spacing=spacing, layout=layout)

    return [table], make


def _stacked_blocks(matrices: Mapping[str, np.ndarray], n_heads: int,
                    row_labels: Sequence[str]) -> tuple[list[str], np.ndarray, list[str]]:
    """The matrices' names, the matrices stacked ``(n_matrices, T, d_model)`` and the unique row labels: at least
    one matrix, all of one shape, T labels, d_model divisible by `n_heads`."""
    if not matrices:
        raise ValueError("head_blocks needs at least one matrix.")
    names = list(matrices)
    mats = [np.asarray(m, dtype=np.float64) for m in matrices.values()]
    labels = unique_labels(row_labels)
    for name, m in zip(names, mats, strict=True):
        if m.ndim != 2 or m.shape[1] % n_heads:
            raise ValueError(f"{name} must be 2-D with a width divisible by n_heads={n_heads}, got shape {m.shape}.")
        if m.shape != mats[0].shape or len(labels) != m.shape[0]:
            raise ValueError(f"{len(labels)} row labels and {name} of shape {m.shape}: every matrix must be "
                             f"{len(labels)} x d_model, like the first, {mats[0].shape}.")
    return names, np.stack(mats), labels


def _bright_blocks(shape: tuple[int, ...], names: list[str], highlight: Mapping[str, tuple[int, int]], d_k: int,
                   calc: dict[str, str]) -> dict[str, Any]:
    """Add to `calc` the fields ``alpha`` (1 on each highlighted ``(row, head)`` of its matrix, 0.2 elsewhere) and
    ``edge``; returns the encodings that fade and outline the cells by them."""
    bright = np.zeros(shape, dtype=bool)  # (n_matrices, T, d_model)
    for name, (row_t, h) in highlight.items():
        bright[names.index(name), row_t, h * d_k:(h + 1) * d_k] = True
    # the record numbers (1-based, as `cell_index` numbers them) of the bright cells
    calc["alpha"] = f"indexof({js_array((np.flatnonzero(bright) + 1).tolist())}, datum._n) >= 0 ? 1 : 0.2"
    calc["edge"] = "datum.alpha == 1 ? 'black' : 'white'"
    return {"opacity": alt.Opacity(field="alpha", type="quantitative", scale=None, legend=None),
            "stroke": alt.Stroke(field="edge", type="nominal", scale=None, legend=None)}


def _dimension_axis(cell_size: int) -> alt.X:
    """The dimensions along the top; narrower cells than 14 px leave their numbers to the head headers and the
    tooltips."""
    dim_labels = cell_size >= 14
    return alt.X(field="col", type="ordinal", sort=None, title=None,
                 axis=alt.Axis(labelAngle=0 if cell_size >= 20 else -90, orient="top", labels=dim_labels,
                               ticks=dim_labels, labelFontSize=min(11, cell_size - 2)))


def _block_tooltip(y_title: str, value_format: str) -> list[alt.Tooltip]:
    return [
        alt.Tooltip(field="matrix", type="nominal", title="matrix"),
        alt.Tooltip(field="head", type="nominal", title="head"),
        alt.Tooltip(field="row", type="nominal", title=y_title),
        alt.Tooltip(field="col", type="nominal", title="dimension"),
        alt.Tooltip(field="value", type="quantitative", title="value", format=value_format),
    ]


def _block_facets(names: list[str], heads: list[str], block_px: int) -> alt.FacetMapping:
    """One facet column per head (its header upright when its block is 14 px wide or more), one row per matrix."""
    column = alt.FacetFieldDef(field="head", type="ordinal", sort=heads, title=None,
                               header=alt.Header(labelFontSize=11, labelAngle=0 if block_px >= 14 else -90))
    row = (alt.FacetFieldDef(field="matrix", type="nominal", sort=names, title=None,
                             header=alt.Header(labelFontSize=14, labelFontWeight="bold", labelAngle=0))
           if len(names) > 1 else alt.Undefined)
    return alt.FacetMapping(row=row, column=column)


def head_maps(*args: Any, **options: Any) -> alt.FacetChart:
    """`head_maps_part` as an Altair chart, its data inline."""
    return chart_of(head_maps_part(*args, **options))


@part_builder()
def head_maps_part(
    weights: np.ndarray,
    labels: Sequence[str],
    *,
    title: str = "",
    columns: int | None = None,
    cell_size: int = 30,
    show_values: bool | None = None,
    value_format: str = ".2f",
    font_size: int = 10,
    select: str | None = None,
) -> tuple[list[Rows], Make]:
    """One attention map per head, side by side (wrapping after `columns`), on ONE viridis scale fixed to [0, 1].

    Equal colours mean equal weights in every panel, so heads can be compared by eye. `select` names a
    click selection of one cell (fields ``h``, ``q``, ``k``), for a page drawn with ``on_select``.

    Data: one ``value`` per cell, in the order of `weights`; the indices ``h`` (head, 0-based), ``q``
    (query), ``k`` (key) and the labels ``head``, ``row``, ``col`` are computed in the browser.
    Exported: one matrix per head (``"attention weights · head 1"``), query tokens on the rows.
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 3 or w.shape[1] != w.shape[2]:
        raise ValueError(f"weights must have shape (H, T, T), got {w.shape}.")
    n_heads, t, _ = w.shape
    if len(labels) != t:
        raise ValueError(f"{len(labels)} token labels for attention maps of shape {w.shape}.")
    if show_values is None:
        show_values = w.size <= MAX_LABELLED_CELLS and cell_size >= MIN_LABELLED_CELL
    table = cell_values(w)["values"]

    def make(data: DataSource) -> alt.FacetChart:
        tokens = js_array(unique_labels(labels))
        calc = dict(head="'head ' + (datum.h + 1)", row=f"{tokens}[datum.q]", col=f"{tokens}[datum.k]")
        if show_values:
            calc["ink"] = ink_expr(SEQUENTIAL_SCHEME, "datum.value")
        x, y = _token_axes(t, cell_size)
        color = alt.Color(field="value", type="quantitative", title="weight",
                          scale=alt.Scale(scheme=SEQUENTIAL_SCHEME, domain=[0.0, 1.0]),
                          legend=alt.Legend(orient="right"))
        params = (None if select is None else
                  [alt.selection_point(name=select, fields=["h", "q", "k"], on="click", clear="dblclick").param])
        cells = panel_cells(x=x, y=y, color=color, tooltip=_map_tooltip(), cell_size=cell_size, params=params,
                            show_values=show_values, value_format=value_format, font_size=font_size)
        facet = alt.FacetFieldDef(field="head", type="ordinal", sort=[f"head {k + 1}" for k in range(n_heads)],
                                  title=None, header=alt.Header(labelFontSize=12))
        transform = cell_index(w.shape, ("h", "q", "k")) + calculate(**calc)
        what = title or "attention weights"
        layout = matrix_layout(w.shape, [f"{what} · head {h + 1}" for h in range(n_heads)], unique_labels(labels),
                               unique_labels(labels), name=f"{what}, every head")
        return facet_chart(data(), transform, cells, facet, columns=columns or n_heads, spacing=10, title=title,
                            layout=layout)

    return [table], make


def _token_axes(t: int, cell_size: int) -> tuple[alt.X, alt.Y]:
    """Keys along the bottom (upright for at most 4 tokens in cells of 20 px or more), queries down the side; cells
    narrower than 9 px leave the tokens to the tooltips (their names would overlap)."""
    readable = cell_size >= 9
    x = alt.X(field="col", type="ordinal", sort=None, title="key token",
              axis=alt.Axis(labelAngle=-90 if t > 4 or cell_size < 20 else 0, labels=readable, ticks=readable))
    y = alt.Y(field="row", type="ordinal", sort=None, title="query token",
              axis=alt.Axis(labels=readable, ticks=readable))
    return x, y


def _map_tooltip() -> list[alt.Tooltip]:
    return [
        alt.Tooltip(field="head", type="nominal", title="head"),
        alt.Tooltip(field="row", type="nominal", title="query token"),
        alt.Tooltip(field="col", type="nominal", title="key token"),
        alt.Tooltip(field="value", type="quantitative", title="weight", format=".3f"),
    ]


def matrix_panels(*args: Any, **options: Any) -> alt.FacetChart:
    """`matrix_panels_part` as an Altair chart, its data inline."""
    return chart_of(matrix_panels_part(*args, **options))


@part_builder(data=('domain',))
def matrix_panels_part(
    panels: Sequence[tuple[str, np.ndarray, Sequence[str], Sequence[str]]],
    *,
    signed: bool = True,
    domain: tuple[float, float] | None = None,
    x_title: str = "column",
    y_title: str = "row",
    cell_size: int = 30,
    show_values: bool | None = None,
    value_format: str = ".2f",
    font_size: int = 10,
) -> tuple[list[Rows], Make]:
    """Titled matrices ``(title, matrix, row_labels, col_labels)`` of one shape, in one row, on ONE colour scale.

    The same picture as `ui.charts.side_by_side` of `ui.charts.heatmap` s with ``shared_color=True``,
    built as a single faceted chart (about half the cost). Each panel keeps its own row and column
    labels in its own order, so a reordered matrix can sit next to the original.

    Data: one ``value`` per cell, panel after panel, row-major; the indices ``p`` (panel), ``r``, ``c``
    and the labels ``panel``, ``row``, ``col`` are computed in the browser. Exported: one matrix
    per panel, under its title, with its own labels.
    """
    stack = _stacked_panels(panels)  # (n_panels, rows, cols)
    shape = stack.shape[1:]
    if show_values is None:
        show_values = stack[0].size <= MAX_LABELLED_CELLS and cell_size >= 22
    if domain is None:
        m = float(np.max(np.abs(stack))) or 1.0
        domain = (-m, m) if signed else (0.0, 1.0)
    lo, hi = domain
    table = cell_values(stack, lo=lo, hi=hi)["values"]

    def make(data: DataSource) -> alt.FacetChart:
        titles = [p[0] for p in panels]
        row_labels = [unique_labels(p[2]) for p in panels]
        col_labels = [unique_labels(p[3]) for p in panels]
        calc = dict(panel=f"{js_array(titles)}[datum.p]", row=f"{js_array(row_labels)}[datum.p][datum.r]",
                    col=f"{js_array(col_labels)}[datum.p][datum.c]")
        if show_values:  # black or white text, whichever reads better on the cell, as in ui.charts.heatmap
            calc["ink"] = ink_expr(DIVERGING_SCHEME if signed else SEQUENTIAL_SCHEME, SCALE_POSITION)
        longest = max(len(str(c)) for cols in col_labels for c in cols)
        x = alt.X(field="col", type="ordinal", sort=None, title=x_title,
                  axis=alt.Axis(labelAngle=0 if 7 * longest <= cell_size else -90, orient="top"))
        y = alt.Y(field="row", type="ordinal", sort=None, title=y_title or None)
        color = alt.Color(field="value", type="quantitative", title=None, scale=colour_scale(signed),
                          legend=alt.Legend(orient="right", gradientLength=int(np.clip(shape[0] * cell_size, 60, 200))))
        cells = panel_cells(x=x, y=y, color=color, tooltip=_panel_tooltip(x_title, y_title), cell_size=cell_size,
                            show_values=show_values, value_format=value_format, font_size=font_size, shape=shape)
        column = alt.FacetFieldDef(field="panel", type="nominal", sort=titles, title=None,
                                   header=alt.Header(labelFontSize=13, labelFontWeight="bold"))
        transform = cell_index(stack.shape, ("p", "r", "c")) + calculate(**calc)
        layout = matrix_layout(stack.shape, titles, _shared_or_each(row_labels), _shared_or_each(col_labels))
        # Independent x and y: every panel shows its own labels in its own order (fixed pixel size, see `panel_cells`).
        return facet_chart(data(), transform, cells, alt.FacetMapping(column=column), spacing=24,
                            independent=("x", "y"), layout=layout)

    return [table], make


def _stacked_panels(panels: Sequence[tuple[str, np.ndarray, Sequence[str], Sequence[str]]]) -> np.ndarray:
    """The panels' matrices stacked ``(n_panels, rows, cols)``: at least one, all of one shape, each labelled."""
    if not panels:
        raise ValueError("matrix_panels needs at least one panel.")
    mats = [np.asarray(p[1], dtype=np.float64) for p in panels]
    for (title, _, rows, cols), m in zip(panels, mats, strict=True):
        if m.ndim != 2 or (len(rows), len(cols)) != m.shape:
            raise ValueError(f"panel {title!r}: {len(rows)} row and {len(cols)} column labels for shape {m.shape}.")
    shapes = {m.shape for m in mats}
    if len(shapes) != 1:
        raise ValueError(f"matrix_panels needs matrices of one shape, got {sorted(shapes)}.")
    return np.stack(mats)


def _panel_tooltip(x_title: str, y_title: str) -> list[alt.Tooltip]:
    return [
        alt.Tooltip(field="panel", type="nominal", title="matrix"),
        alt.Tooltip(field="row", type="nominal", title=y_title or "row"),
        alt.Tooltip(field="col", type="nominal", title=x_title),
        alt.Tooltip(field="value", type="quantitative", title="value", format=".3f"),
    ]


def _shared_or_each(labels: list[list[str]]) -> list[str] | list[list[str]]:
    """One list of labels if every panel has the same, else one per panel (keeps the spec's ``usermeta`` small)."""
    return labels[0] if all(ls == labels[0] for ls in labels) else labels


def facets_side_by_side(*charts: alt.FacetChart, spacing: int = 36) -> alt.HConcatChart:
    """Charts from this module in one row, each with its own colour scale (`ui.charts.arrange.side_by_side` for facets).

    Vega-Lite allows ``usermeta`` only at the top level, so each chart's matrix layouts move
    there, marked with the chart's place (``"view": k``).
    """
    views, layouts = [], []
    for k, chart in enumerate(charts):
        meta = chart.usermeta if isinstance(chart.usermeta, dict) else {}
        layouts += [{**layout, "view": k} for layout in meta.get(LAYOUT_KEY, [])]
        view = chart.copy(deep=False)
        view.usermeta = alt.Undefined
        views.append(view)
    return alt.HConcatChart(hconcat=views, spacing=spacing,
                            usermeta={LAYOUT_KEY: layouts, **CANVAS} if layouts else CANVAS,
                            resolve=alt.Resolve(scale=alt.ScaleResolveMap(color="independent")))
