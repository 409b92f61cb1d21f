"""The parts every faceted heatmap of `ui.charts.facets` is made of: its data, the cell indices and labels computed in
the browser, the per-panel heatmap, and the facet chart around it.

The data is just the cell values, one ``{"value": x}`` record per cell in row-major order; each cell's indices (from
its record number), every label and the text colour are computed in the browser by ``window``/``calculate``
transforms indexing short label arrays, so no per-cell indices or strings are built, serialised or hashed in
Python. The charts are built with constructors (every chained ``.encode()``/``.properties()`` deep-copies the
chart).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import altair as alt
import numpy as np

from ui.charts.inline_data import Rows
from ui.charts.spec import CANVAS, tooltip_expr
from ui.export import LAYOUT_KEY


def cell_values(values: np.ndarray, **constants: float) -> dict[str, Rows]:
    """Inline Vega-Lite data: one record ``{"value": x, **constants}`` per entry of `values`, in C (row-major) order.

    The position of each cell is not stored: `cell_index` recovers it in the browser from the
    record's place in the list, which keeps the data (and Altair's JSON hash of it) small.
    `constants` are repeated in every record: the colour domain ``lo``, ``hi`` (`ui.charts.spec.domain_from_data`).
    """
    value = np.asarray(values, dtype=np.float64).ravel()
    return {"values": Rows({"value": value} | {k: np.full(value.size, c) for k, c in constants.items()})}


def cell_index(shape: tuple[int, ...], names: Sequence[str]) -> list[Any]:
    """Transforms that number the records 0, 1, ... and split that number into one index per axis of `shape`.

    ``cell_index((H, T, T), ("h", "q", "k"))`` gives record ``n`` the fields ``h = n // (T*T)``,
    ``q = (n // T) % T`` and ``k = n % T``, exactly NumPy's row-major order.
    """
    steps: list[Any] = [alt.WindowTransform(window=[alt.WindowFieldDef(op="row_number", **{"as": "_n"})])]
    stride = int(np.prod(shape))
    for name, size in zip(names, shape, strict=True):
        stride //= size
        steps += calculate(**{name: f"floor((datum._n - 1) / {stride}) % {size}"})
    return steps


def js_array(values: Sequence[Any]) -> str:
    """A JSON array literal, which is also a valid Vega expression."""
    return json.dumps(list(values), ensure_ascii=False)


def calculate(**fields: str) -> list[alt.CalculateTransform]:
    """``calculate`` transforms, one per new field: ``calculate(row='["a","b"][datum.q]')``."""
    return [alt.CalculateTransform(**{"calculate": expr, "as": name}) for name, expr in fields.items()]


def panel_cells(
    *,
    x: alt.X,
    y: alt.Y,
    color: alt.Color,
    tooltip: list[alt.Tooltip],
    cell_size: int,
    show_values: bool,
    value_format: str,
    font_size: int,
    shape: tuple[int, int] | None = None,
    params: list[Any] | None = None,
    emphasis: dict[str, Any] | None = None,
    values_where: str | None = None,
) -> alt.Chart | alt.LayerChart:
    """The per-panel heatmap (rect, plus value labels in the ``ink`` colour if `show_values`), to be faceted.

    Panels are sized by step (`cell_size` per row/column), or, if `shape` ``(rows, cols)`` is given,
    by the fixed pixel size of that shape, which Vega needs when the y scales are independent.
    `values_where` (a Vega expression) prints the values of those cells only.
    """
    if shape is None:
        size = dict(width=alt.Step(cell_size), height=alt.Step(cell_size))
    else:
        size = dict(width=shape[1] * cell_size, height=shape[0] * cell_size)
    tip = tooltip_expr(tooltip)  # on the marks, not as an encoding channel: cheaper to evaluate per cell
    rect_mark = alt.MarkDef(type="rect", stroke="white", strokeWidth=0.5 if cell_size >= 9 else 0, tooltip=tip)
    extra = emphasis or {}  # e.g. opacity and stroke encodings that single out some cells
    rect_params = params or alt.Undefined
    if not show_values:
        return alt.Chart(mark=rect_mark, params=rect_params, **size,
                         encoding=alt.FacetedEncoding(x=x, y=y, color=color, **extra))
    rect = alt.Chart(mark=rect_mark, params=rect_params, encoding=alt.FacetedEncoding(color=color, **extra))
    only = [alt.FilterTransform(filter=values_where)] if values_where else alt.Undefined
    text_mark = alt.MarkDef(type="text", fontSize=font_size, tooltip=tip)
    text = alt.Chart(mark=text_mark, transform=only, encoding=alt.FacetedEncoding(
        text=alt.Text(field="value", type="quantitative", format=value_format),
        # "white"/"black" used as-is; `fill`, not `color`, so it shares no scale (or legend) with the cells
        fill=alt.Fill(field="ink", type="nominal", scale=None, legend=None),
    ))
    return alt.LayerChart(layer=[rect, text], encoding=alt.SharedEncoding(x=x, y=y), **size)


def facet_chart(
    data: alt.InlineData | alt.NamedData,
    transform: list[Any],
    cells: alt.Chart | alt.LayerChart,
    facet: alt.FacetMapping | alt.FacetFieldDef,
    *,
    spacing: int | dict,
    columns: int | None = None,
    independent: tuple[str, ...] = (),
    title: str = "",
    layout: dict[str, Any],
) -> alt.FacetChart:
    """``alt.FacetChart`` built in one constructor call (no chained copies); colour is shared across panels.

    `layout` (`ui.export.matrix_layout`) goes into the spec's ``usermeta``, for the export menu.
    """
    resolve = (alt.Resolve(scale=alt.ScaleResolveMap(**dict.fromkeys(independent, "independent")))
               if independent else alt.Undefined)
    return alt.FacetChart(data=data, transform=transform, facet=facet, spec=cells,
                          spacing=spacing, columns=columns or alt.Undefined, resolve=resolve,
                          title=title or alt.Undefined, usermeta={LAYOUT_KEY: [layout], **CANVAS})
