"""The heatmap every page draws a matrix with, and its long-form data.

Colour conventions, used on every page:

* signed matrices (X, W, Q, K, V, scores, outputs): a diverging, colour-blind-safe scheme centred at 0
  (blue negative, orange positive), its domain ``[-m, m]`` with m the largest ``|value|``;
* attention weights (probabilities in [0, 1]): a sequential scheme (viridis), with the domain fixed to [0, 1]
  so maps can be compared by eye.

Colour is never the only carrier: small matrices print their values in the cells and every cell has a tooltip.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from ui.charts.arrange import independent_colours
from ui.charts.inline_data import Rows, shared_column
from ui.charts.palette import DIVERGING_SCHEME, SEQUENTIAL_SCHEME, ink
from ui.charts.spec import domain_from_data, title_from_data
from ui.charts.template import DataSource, Make, chart_of, part_builder
from ui.remembered import Remembered

#: Above this many cells the values are no longer printed in the cells (only in tooltips).
MAX_LABELLED_CELLS = 400


def unique_labels(labels: Sequence[str]) -> list[str]:
    """Make axis labels unique, so a repeated token gets its own row.

    ``["the", "cat", "the"] -> ["the (0)", "cat", "the (2)"]``: Vega-Lite merges
    equal category names, which would silently fold two positions into one.
    """
    if len(set(labels)) == len(labels):  # none repeated: the labels as they are
        return [str(lab) for lab in labels]
    counts = Counter(labels)
    return [f"{lab} ({i})" if counts[lab] > 1 else str(lab) for i, lab in enumerate(labels)]


#: A long-form table as columns: name -> one array per column, all of the same length.
Columns = dict[str, np.ndarray]


def matrix_columns(
    matrix: np.ndarray,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
) -> Columns:
    """Long-form columns of a 2-D matrix, one entry per cell: ``row``, ``col``, ``i``, ``j``, ``value``, row-major."""
    m = np.asarray(matrix, dtype=np.float64)
    if m.ndim != 2:
        raise ValueError(f"a heatmap needs a 2-D matrix, got shape {m.shape}.")
    n_rows, n_cols = m.shape
    rows = tuple(row_labels) if row_labels is not None else n_rows
    cols = tuple(col_labels) if col_labels is not None else n_cols
    cells = _CELL_COLUMNS.get((rows, cols, m.shape), None, lambda: cell_columns(row_labels, col_labels, m.shape))
    return {**cells, "value": m.ravel()}


def cell_columns(row_labels: Sequence[str] | None, col_labels: Sequence[str] | None,
                 shape: tuple[int, int]) -> Columns:
    """Each cell's ``row`` and ``col`` labels (`unique_labels`; by default the indices) and its indices ``i``,
    ``j``, row-major, as `shared_column` s: every map of these labels reads the same ones."""
    n_rows, n_cols = shape
    rows = unique_labels(row_labels) if row_labels is not None else [str(i) for i in range(n_rows)]
    cols = unique_labels(col_labels) if col_labels is not None else [str(j) for j in range(n_cols)]
    if len(rows) != n_rows or len(cols) != n_cols:
        raise ValueError(f"{len(rows)} row and {len(cols)} column labels for a matrix of shape {shape}.")
    i, j = np.divmod(np.arange(n_rows * n_cols), n_cols)
    return {"row": shared_column(np.asarray(rows, dtype=object)[i]),
            "col": shared_column(np.asarray(cols, dtype=object)[j]), "i": shared_column(i), "j": shared_column(j)}


#: `cell_columns` by labels and shape, for every session (the columns are read-only).
_CELL_COLUMNS = Remembered(max_entries=512)


def constant_column(value: bool | str, n: int) -> np.ndarray:
    """`value` `n` times, a `shared_column` made once per value and length."""
    return _CONSTANT_COLUMNS.get((type(value), value, n), None,
                                 lambda: shared_column(np.full(n, value, dtype=object if isinstance(value, str)
                                                               else None)))


#: `constant_column` by value and length.
_CONSTANT_COLUMNS = Remembered(max_entries=512)


def matrix_frame(
    matrix: np.ndarray,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
) -> pd.DataFrame:
    """`matrix_columns` as a pandas DataFrame: one row per cell with ``row``, ``col``, ``i``, ``j``, ``value``."""
    return pd.DataFrame(matrix_columns(matrix, row_labels, col_labels))


def records(columns: Columns) -> list[dict[str, Any]]:
    """`columns` as JSON-ready records, one dict per row; a non-finite number becomes None (null), as Altair
    does for a DataFrame (the masked −∞ scores are drawn as missing cells)."""
    return Rows(columns).rows()


def extra_tooltip_lines(
    df: pd.DataFrame | Columns, extra: Mapping[str, np.ndarray] | None, shape: tuple[int, ...], value_format: str
) -> list[alt.Tooltip]:
    """Add the `extra` arrays (``{label: array of the matrix's shape}``) to a `matrix_frame` (or `matrix_columns`)
    as columns ``x0, x1, …`` and return their tooltip lines: numbers shown with `value_format`, strings as they are."""
    lines = []
    for k, (label, values) in enumerate((extra or {}).items()):
        arr = np.asarray(values)
        if arr.shape != tuple(shape):
            raise ValueError(f"extra tooltip {label!r} has shape {arr.shape}, the matrix {tuple(shape)}.")
        df[f"x{k}"] = arr.ravel()
        numeric = np.issubdtype(arr.dtype, np.number)
        lines.append(alt.Tooltip(field=f"x{k}", type="quantitative" if numeric else "nominal", title=label,
                                 format=value_format if numeric else alt.Undefined))
    return lines


def emphasis_encoding(
    df: pd.DataFrame | Columns, highlight_rows: Sequence[int] | None, highlight_cols: Sequence[int] | None
) -> dict[str, Any]:
    """Fade every cell of a `matrix_frame` (or `matrix_columns`) outside the highlighted rows and columns, and
    outline the others.

    Adds the columns ``alpha`` and ``edge`` and returns the rect encodings that use them (none without highlight).
    """
    if highlight_rows is None and highlight_cols is None:
        return {}
    on = np.ones(len(df["i"]), dtype=bool)
    if highlight_rows is not None:
        on &= np.isin(np.asarray(df["i"]), list(highlight_rows))
    if highlight_cols is not None:
        on &= np.isin(np.asarray(df["j"]), list(highlight_cols))
    df["alpha"] = np.where(on, 1.0, 0.25)
    df["edge"] = np.where(on, "black", "white")
    return {"opacity": alt.Opacity(field="alpha", type="quantitative", scale=None),
            "stroke": alt.Stroke(field="edge", type="nominal", scale=None)}


def heatmap(matrix: np.ndarray, **options: Any) -> alt.LayerChart:
    """`heatmap_part` as an Altair chart, its data inline."""
    return chart_of(heatmap_part(matrix, **options))


@part_builder(data=("row_labels", "col_labels", "domain"))
def heatmap_part(
    matrix: np.ndarray,
    *,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    title: str = "",
    x_title: str = "column",
    y_title: str = "row",
    signed: bool = True,
    domain: tuple[float, float] | None = None,
    show_values: bool | None = None,
    value_format: str = ".3f",
    cell_size: int = 44,
    font_size: int = 12,
    extra: Mapping[str, np.ndarray] | None = None,
    highlight_rows: Sequence[int] | None = None,
    highlight_cols: Sequence[int] | None = None,
    select: str | None = None,
    title_in_data: bool = False,
    legend_length: int | None = None,
    slanted_x_labels: bool = False,
    width: int | None = None,
    values_in_data: bool = False,
    stroke_width: float = 1,
) -> tuple[list[Rows], Make]:
    """A labelled heatmap of `matrix`, rows top to bottom as in the printed matrix (a `ui.charts.template.Part`).

    Its data is the columns of `matrix_columns` as `Rows`, not a DataFrame: Altair then has nothing to convert,
    and no row is made on the way to the browser. The labels and the colour domain are data; the chart's
    structure follows the matrix's shape and the options.

    Args:
        signed: diverging scale centred at 0 if True, sequential if False
            (attention weights).
        domain: colour domain; defaults to symmetric ``[-m, m]`` for signed
            matrices and ``[0, 1]`` for weights.
        show_values: print each value in its cell; defaults to True for
            matrices of at most `MAX_LABELLED_CELLS` cells.
        extra: more tooltip lines, ``{label: array of the matrix's shape}``;
            numbers are shown with `value_format`, strings as they are (e.g.
            the arithmetic that produced the cell).
        highlight_rows, highlight_cols: row / column indices to emphasise;
            every other cell is faded.
        select: name of a click selection (fields ``i``, ``j``) to add, so a
            page can react to the clicked cell (``on_select="rerun"``).
        title_in_data: keep `title` in the data (`title_from_data`), for a title
            that quotes a slider: the spec then stays the same as the slider moves.
        legend_length: the colour legend's length in pixels; by default about the matrix's height.
        slanted_x_labels: column labels at 45°, for long labels (repeated words carry their position).
        width: the map's width in pixels whatever its number of columns (each column ``width / n_cols``
            wide); by default each column is `cell_size` wide.
        values_in_data: whether the values are printed is data (the column ``labelled``), not structure: the
            text layer is always there and draws only the labelled cells. With `width` and `legend_length`,
            the chart's structure then does not depend on the matrix's shape.
        stroke_width: the white line between cells, in pixels.
    """
    df = matrix_columns(matrix, row_labels, col_labels)
    extra_tooltips = extra_tooltip_lines(df, extra, np.shape(matrix), value_format)
    emphasis = emphasis_encoding(df, highlight_rows, highlight_cols)
    if show_values is None:
        show_values = len(df["value"]) <= MAX_LABELLED_CELLS
    colour_columns(df, signed, domain, with_ink=show_values)
    if values_in_data:
        df["labelled"] = constant_column(bool(show_values), len(df["value"]))  # read by the text layer's filter
    if title_in_data and title:
        df["title"] = constant_column(str(title), len(df["value"]))  # read by `title_from_data`
    legend = legend_length or int(np.clip(cell_size * np.shape(matrix)[0] - 20, 60, 300))

    def make(data: DataSource) -> alt.LayerChart:
        layers = [cell_layer(signed, emphasis, legend, select, stroke_width)]
        if show_values or values_in_data:
            layers.append(value_layer(font_size, value_format, only_labelled=values_in_data))
        # One constructor call rather than chained `.encode().resolve_scale().properties()`: each of those
        # deep-copies the chart, re-creating its layers and every encoding object.
        return alt.LayerChart(
            layer=layers, data=data(), title=title_from_data() if title_in_data and title else title or alt.Undefined,
            encoding=cells_encoding(x_title, y_title, value_format, extra_tooltips, slanted_x_labels),
            resolve=independent_colours(),  # the cell colours' scale is not the text's ink
            width=alt.Step(cell_size) if width is None else width, height=alt.Step(cell_size),
        )

    return [Rows(df)], make


def colour_columns(df: Columns, signed: bool, domain: tuple[float, float] | None, *, with_ink: bool = True) -> None:
    """Add to `matrix_columns`' `df` what its colours read from the data: ``lo`` and ``hi``, the colour domain
    (`domain_from_data`: by default ``[-m, m]`` with m the largest ``|value|`` when `signed`, else ``[0, 1]``), and
    (`with_ink`) ``ink``, each cell's text colour, black or white, whichever reads better on the cell's colour."""
    if domain is None:
        if signed:
            m = float(np.max(np.abs(df["value"]))) or 1.0
            domain = (-m, m)
        else:
            domain = (0.0, 1.0)
    lo, hi = domain
    if with_ink:
        t = (df["value"] - lo) / ((hi - lo) or 1.0)  # position on the colour scale
        df["ink"] = ink(DIVERGING_SCHEME if signed else SEQUENTIAL_SCHEME, t)
    n_cells = len(df["value"])
    df["lo"], df["hi"] = np.full(n_cells, float(lo)), np.full(n_cells, float(hi))


def cells_encoding(x_title: str, y_title: str, value_format: str, extra_tooltips: Sequence[alt.Tooltip],
                   slanted_x_labels: bool) -> alt.FacetedEncoding:
    """What both layers share: the columns along the top (slanted for long labels), the rows down the side in the
    printed matrix's order, and the tooltip (the cell's row, column and value, then the `extra` lines)."""
    x_axis = (alt.Axis(labelAngle=-45, orient="top", labelOverlap=False) if slanted_x_labels
              else alt.Axis(labelAngle=0, orient="top"))
    tooltip = [
        alt.Tooltip(field="row", type="nominal", title=y_title),
        alt.Tooltip(field="col", type="nominal", title=x_title),
        alt.Tooltip(field="value", type="quantitative", title="value", format=value_format),
        *extra_tooltips,
    ]
    return alt.FacetedEncoding(x=alt.X(field="col", type="ordinal", sort=None, title=x_title, axis=x_axis),
                               y=alt.Y(field="row", type="ordinal", sort=None, title=y_title), tooltip=tooltip)


def colour_scale(signed: bool) -> alt.Scale:
    """The diverging scale centred at 0 for a signed matrix, the sequential one for weights, each over the domain
    its data holds (`domain_from_data`)."""
    if signed:
        return alt.Scale(scheme=DIVERGING_SCHEME, domain=domain_from_data(), domainMid=0)
    return alt.Scale(scheme=SEQUENTIAL_SCHEME, domain=domain_from_data())


def cell_layer(signed: bool, emphasis: Mapping[str, Any], legend_length: int, select: str | None,
               stroke_width: float = 1) -> alt.Chart:
    """The cells, coloured by value on the diverging scale centred at 0 (`signed`) or the sequential one, its domain
    read from the data, `stroke_width` px of white between them; faded and outlined by `emphasis_encoding`'s
    `emphasis`; a click on one selects its ``i`` and ``j`` as `select`."""
    encoding: dict[str, Any] = dict(
        color=alt.Color(field="value", type="quantitative", scale=colour_scale(signed), title=None,
                        legend=alt.Legend(orient="right", gradientLength=legend_length)),
    )
    encoding.update(emphasis)
    rect = alt.Chart().mark_rect(stroke="white", strokeWidth=2 if emphasis else stroke_width).encode(**encoding)
    if select is not None:
        rect = rect.add_params(alt.selection_point(name=select, fields=["i", "j"], on="click", clear="dblclick"))
    return rect


def value_layer(font_size: int, value_format: str, *, only_labelled: bool = False) -> alt.Chart:
    """Each cell's value printed in it, in its ``ink`` (`only_labelled`: in the cells whose ``labelled`` is true)."""
    labelled = [alt.FilterTransform(filter="datum.labelled")] if only_labelled else alt.Undefined
    return alt.Chart(transform=labelled).mark_text(fontSize=font_size).encode(
        text=alt.Text(field="value", type="quantitative", format=value_format),
        # scale=None: the column holds the colours themselves (cheaper than alt.condition)
        color=alt.Color(field="ink", type="nominal", scale=None),
    )
