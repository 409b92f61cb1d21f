"""Chart builders: pure functions, data in, `alt.Chart` out.

Nothing here imports Streamlit, so every chart can be tested through
``chart.to_dict()``. Colour conventions, used on every page:

* signed matrices (X, W, Q, K, V, scores, outputs): a diverging,
  colour-blind-safe scheme centred at 0 (blue negative, orange positive);
* attention weights (probabilities in [0, 1]): a sequential scheme (viridis),
  with the domain fixed to [0, 1] so maps can be compared by eye.

Colour is never the only carrier: small matrices print their values in the
cells and every cell has a tooltip.

A colour domain that depends on the numbers (``[-m, m]`` with m the largest
``|value|``) is read from the chart's own data (`domain_from_data`), not
written into the spec. So moving a slider changes only a chart's data, and the
browser updates the drawn chart in place instead of compiling and drawing it
again. `to_spec` exports a chart
for that: it names the datasets by position (Altair names them by a hash of
their content) and resolves `THIS_DATA`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import numpy as np
import pandas as pd
from altair.utils.schemapi import disable_debug_mode

from ui.altair_compose import compose_without_needless_copies

# Altair's "debug mode" validates every schema object (an axis, a scale, a step) against the Vega-Lite schema
# as it is created, for early tracebacks. The app's charts are fixed code, and the test suite validates each
# whole spec (`chart.to_dict()`), so building skips it. (It also ends a
# race: Altair's `copy` switches the flag off and back on around each copy, across every session's thread.)
disable_debug_mode()
# Composing charts (layers, grids, rows) deep-copied every sub-chart to lift selection parameters, even where
# there were none (see `ui.altair_compose`).
compose_without_needless_copies()

DIVERGING_SCHEME = "blueorange"
SEQUENTIAL_SCHEME = "viridis"
#: Above this many cells the values are no longer printed in the cells (only in tooltips).
MAX_LABELLED_CELLS = 400
#: `usermeta` that makes Streamlit's vega-embed draw on a canvas. For charts of hundreds of marks: after a
#: slider step the browser repaints a canvas faster than it updates as many SVG elements.
CANVAS = {"embedOptions": {"renderer": "canvas"}}


def drawn_on_canvas(spec: dict[str, Any]) -> bool:
    """True if Streamlit will draw `spec` on a canvas (its ``usermeta`` holds `CANVAS`)."""
    return spec.get("usermeta", {}).get("embedOptions", {}).get("renderer") == "canvas"


def without_aria(spec: dict[str, Any]) -> dict[str, Any]:
    """`spec` with Vega's ARIA attributes off, for a chart drawn on a canvas (a shallow copy; the data is shared).

    Vega-Lite gives every mark item an ARIA description, a string built by a Vega expression for each
    cell again after every slider step. Only Vega's SVG renderer writes them out (as ``aria-label``s);
    a canvas has no element per item to put them on, so there they are computed for nothing. The chart's own
    ``alt`` text, which Streamlit puts on the chart, is unaffected.
    """
    return {**spec, "config": {**spec.get("config", {}), "aria": False}}


def tooltip_expr(lines: Sequence[alt.Tooltip]) -> alt.ExprRef:
    """A mark's tooltip as one Vega object expression, ``{"title": datum["field"], ...}``, numbers formatted.

    It shows the same lines as the ``tooltip`` encoding channel, for less work: Vega-Lite compiles every
    line of the channel to a guard against missing and list values (``isValid(…) ? isArray(…) ? join(…)
    : … : …``), which Vega evaluates for every cell after every slider step, with the interpreter
    Streamlit runs it under. The cells of this app's charts always hold one value per field, so the guard
    is not needed.
    Set as the mark's ``tooltip`` on every layer of a cell (a layer without one would get Streamlit's
    theme default, a tooltip built from all its encoded fields).
    """
    parts = []
    for line in lines:
        spec = line.to_dict()
        value = f"datum[{json.dumps(spec['field'])}]"
        if "format" in spec:
            value = f"format({value}, {json.dumps(spec['format'])})"
        parts.append(f"{json.dumps(spec.get('title', spec['field']), ensure_ascii=False)}: {value}")
    return alt.ExprRef(expr="{" + ", ".join(parts) + "}")


#: Placeholder, in a Vega expression, for the name of the dataset of the view the expression sits in
#: (`to_spec` fills it in: the names are only known once the chart is exported).
THIS_DATA = "@this-data"
#: A Vega expression for the first row of that dataset, where `domain_from_data` and `title_from_data` read.
THIS_ROW = f"data('{THIS_DATA}')[0]"
#: How Altair names a dataset it moved out of the spec: ``data-`` and the MD5 of its JSON.
ALTAIR_DATASET_NAME = re.compile(r"data-[0-9a-f]{32}")


def domain_from_data(lo: str = "lo", hi: str = "hi") -> alt.ExprRef:
    """A scale domain ``[lo, hi]`` read from the first row of the view's own data (columns `lo`, `hi`).

    The numbers live in the data, so a chart whose domain follows its data keeps the same spec
    from one slider step to the next (see the module docstring).
    """
    return alt.ExprRef(expr=f"[{THIS_ROW}.{lo}, {THIS_ROW}.{hi}]")


def title_from_data(field: str = "title") -> alt.TitleParams:
    """A chart title read from the first row of the view's own data (column `field`): a title that
    quotes a slider's value (``"… at τ = 0.5"``) then changes the data, not the spec."""
    return alt.TitleParams(text=alt.ExprRef(expr=f"{THIS_ROW}.{field}"))


#: The expression `title_from_data` writes: the dataset (once named) and the column holding the title.
TITLE_EXPR = re.compile(r"data\('([^']+)'\)\[0\]\.(\w+)")


def view_title(view: Mapping[str, Any], datasets: Mapping[str, Any]) -> str | None:
    """The title a view shows: its text, or the text `title_from_data` reads from `datasets` (records or
    DataFrames, by name; the spec must have been through `stable_spec`). None for an untitled view."""
    title = view.get("title")
    text = title.get("text") if isinstance(title, Mapping) else title
    if isinstance(text, Mapping) and (found := TITLE_EXPR.fullmatch(str(text.get("expr", "")))):
        name, field = found.groups()
        data = datasets.get(name)
        rows = data.head(1).to_dict("records") if isinstance(data, pd.DataFrame) else (data or [])[:1]
        return str(rows[0][field]) if rows else None
    return text if isinstance(text, str) else None


def stable_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """`spec` with Altair's datasets named ``d0, d1, …`` in order, and `THIS_DATA` replaced by the view's dataset name.

    Altair names each dataset ``data-<hash of its content>``, so new numbers would mean a new spec and
    the browser would rebuild the chart from scratch. Positional names keep the spec the same while the
    data change. Datasets a builder named itself keep their names. Idempotent; a spec without datasets
    is returned as it is.
    """
    datasets = spec.get("datasets")
    if not datasets:
        return spec
    hashed = [name for name in datasets if ALTAIR_DATASET_NAME.fullmatch(name)]
    names = {old: f"d{k}" for k, old in enumerate(hashed)} | {n: n for n in datasets if n not in hashed}
    if len(set(names.values())) != len(names):
        raise ValueError(f"dataset names {sorted(datasets)} collide with the positional names d0, d1, ...")

    def visit(node: Any, here: str | None) -> Any:
        if isinstance(node, dict):
            data = node.get("data")
            if isinstance(data, dict) and data.get("name") in names:
                here = names[data["name"]]
            return {k: visit(v, here) for k, v in node.items()}
        if isinstance(node, list):
            return [visit(v, here) for v in node]
        if isinstance(node, str):
            if node in names:
                return names[node]
            if THIS_DATA in node:
                if here is None:
                    raise ValueError(f"{node!r} refers to its view's data, but the view has no named dataset.")
                return node.replace(THIS_DATA, here)
        return node

    out = visit({k: v for k, v in spec.items() if k != "datasets"}, None)
    out["datasets"] = {names[old]: values for old, values in datasets.items()}
    return out


def to_spec(chart: alt.TopLevelMixin, *, canvas: bool = False) -> dict[str, Any]:
    """The chart's Vega-Lite spec as the app draws it: unvalidated (the tests validate), via `stable_spec`.

    ``canvas=True`` draws it on a canvas (`CANVAS`), keeping any other ``usermeta`` it has. That is set on the
    spec, not on the chart: Altair's ``.properties()`` deep-copies a chart and every chart inside it.
    """
    spec = stable_spec(chart.to_dict(validate=False))
    if canvas:
        meta = spec.get("usermeta")
        spec["usermeta"] = {**(meta if isinstance(meta, dict) else {}), **CANVAS}
    return spec


def unique_labels(labels: Sequence[str]) -> list[str]:
    """Make axis labels unique, so a repeated token gets its own row.

    ``["the", "cat", "the"] -> ["the (0)", "cat", "the (2)"]``: Vega-Lite merges
    equal category names, which would silently fold two positions into one.
    """
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
    rows = unique_labels(row_labels) if row_labels is not None else [str(i) for i in range(n_rows)]
    cols = unique_labels(col_labels) if col_labels is not None else [str(j) for j in range(n_cols)]
    if len(rows) != n_rows or len(cols) != n_cols:
        raise ValueError(f"{len(rows)} row and {len(cols)} column labels for a matrix of shape {m.shape}.")
    i, j = np.divmod(np.arange(m.size), n_cols)
    return {"row": np.asarray(rows, dtype=object)[i], "col": np.asarray(cols, dtype=object)[j], "i": i, "j": j,
            "value": m.ravel()}


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
    lists = {}
    for name, values in columns.items():
        arr = np.asarray(values)
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            lists[name] = [v if np.isfinite(v) else None for v in arr.tolist()]
        else:
            lists[name] = arr.tolist()
    return [dict(zip(lists, row, strict=True)) for row in zip(*lists.values(), strict=True)]


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


def heatmap(
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
) -> alt.LayerChart:
    """A labelled heatmap of `matrix`, rows top to bottom as in the printed matrix.

    Its data is records built from `matrix_columns`, not a DataFrame: Altair then has nothing to convert,
    which makes a heatmap faster to build.

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
    """
    df = matrix_columns(matrix, row_labels, col_labels)
    extra_tooltips = extra_tooltip_lines(df, extra, np.shape(matrix), value_format)
    emphasis = emphasis_encoding(df, highlight_rows, highlight_cols)
    emphasise = bool(emphasis)
    if show_values is None:
        show_values = len(df["value"]) <= MAX_LABELLED_CELLS
    if domain is None:
        if signed:
            m = float(np.max(np.abs(df["value"]))) or 1.0
            domain = (-m, m)
        else:
            domain = (0.0, 1.0)
    lo, hi = domain
    # Text colour that stays readable on the cell: white on the dark ends of each scheme.
    t = (df["value"] - lo) / ((hi - lo) or 1.0)
    dark = (np.abs(t - 0.5) > 0.3) if signed else (t < 0.55)
    df["ink"] = np.where(dark, "white", "black")
    n_cells = len(df["value"])
    df["lo"], df["hi"] = np.full(n_cells, float(lo)), np.full(n_cells, float(hi))  # read by `domain_from_data`
    n_rows, n_cols = np.shape(matrix)

    scale = (
        alt.Scale(scheme=DIVERGING_SCHEME, domain=domain_from_data(), domainMid=0)
        if signed
        else alt.Scale(scheme=SEQUENTIAL_SCHEME, domain=domain_from_data())
    )
    x = alt.X(field="col", type="ordinal", sort=None, title=x_title, axis=alt.Axis(labelAngle=0, orient="top"))
    y = alt.Y(field="row", type="ordinal", sort=None, title=y_title)
    tooltip = [
        alt.Tooltip(field="row", type="nominal", title=y_title),
        alt.Tooltip(field="col", type="nominal", title=x_title),
        alt.Tooltip(field="value", type="quantitative", title="value", format=value_format),
        *extra_tooltips,
    ]
    rect_enc: dict[str, Any] = dict(
        color=alt.Color(field="value", type="quantitative", scale=scale, title=None,
                        legend=alt.Legend(orient="right",
                                          gradientLength=int(np.clip(cell_size * n_rows - 20, 60, 300)))),
    )
    rect_enc.update(emphasis)
    rect = alt.Chart().mark_rect(stroke="white", strokeWidth=1 if not emphasise else 2).encode(**rect_enc)
    if select is not None:
        rect = rect.add_params(alt.selection_point(name=select, fields=["i", "j"], on="click", clear="dblclick"))
    layers: list[alt.Chart] = [rect]
    if show_values:
        layers.append(
            alt.Chart().mark_text(fontSize=font_size).encode(
                text=alt.Text(field="value", type="quantitative", format=value_format),
                # scale=None: the column holds the colours themselves (cheaper than alt.condition)
                color=alt.Color(field="ink", type="nominal", scale=None),
            )
        )
    if title_in_data and title:
        df["title"] = np.full(len(df["value"]), title, dtype=object)  # read by `title_from_data`
        title = title_from_data()
    # One constructor call rather than chained `.encode().resolve_scale().properties()`: each of those deep-copies
    # the chart, re-creating its layers and every encoding object.
    return alt.LayerChart(
        layer=layers, data=alt.InlineData(values=records(df)), title=title or alt.Undefined,
        encoding=alt.FacetedEncoding(x=x, y=y, tooltip=tooltip),
        resolve=independent_colours(),  # the cell colours' scale is not the text's ink
        width=alt.Step(cell_size), height=alt.Step(cell_size),
    )


def independent_colours(independent: bool = True) -> alt.Resolve:
    """``resolve`` for a layered or composed chart: each part its own colour scale, or one shared by all."""
    return alt.Resolve(scale=alt.ScaleResolveMap(color="independent" if independent else "shared"))


def side_by_side(*charts: alt.TopLevelMixin, shared_color: bool = False, spacing: int = 28) -> alt.HConcatChart:
    """Charts in one row; one `st.altair_chart` call instead of several (each call costs a validation).

    With ``shared_color=True`` all panels use one colour scale, so equal colours mean equal values.
    """
    return alt.HConcatChart(hconcat=list(charts), spacing=spacing, resolve=independent_colours(not shared_color))


def grid(*charts: alt.TopLevelMixin, columns: int, shared_color: bool = False, spacing: int = 28) -> alt.ConcatChart:
    """Charts in rows of `columns`, as one chart: one Vega view for the browser to update instead of one per row.

    The browser updates each view separately on every slider step, so one view for a whole grid (W_q, W_k, W_v
    above Q, K, V on the worked example) is cheaper than one per row. Colour scales are independent unless
    ``shared_color=True``, as in `side_by_side`. A grid holds many cells, so it is drawn on a canvas (`CANVAS`).
    """
    # One constructor call: each chained `.resolve_scale()` or `.properties()` deep-copies every map.
    return alt.ConcatChart(concat=list(charts), columns=columns, spacing=spacing, usermeta=CANVAS,
                           resolve=independent_colours(not shared_color))


def line_chart(
    df: pd.DataFrame,
    *,
    x: str,
    y: str,
    color: str | None = None,
    title: str = "",
    x_title: str | None = None,
    y_title: str | None = None,
    log_x: bool = False,
    log_y: bool = False,
    points: bool = True,
    width: int = 360,
    height: int = 240,
    y_format: str = ".3g",
) -> alt.Chart:
    """Lines of `y` against quantitative `x`, one per value of `color`, with a tooltip on every point."""
    x_enc = alt.X(field=x, type="quantitative", title=x_title or x,
                  scale=alt.Scale(type="log", base=2) if log_x else alt.Undefined)
    y_enc = alt.Y(field=y, type="quantitative", title=y_title or y,
                  scale=alt.Scale(type="log") if log_y else alt.Undefined)
    tooltip = [alt.Tooltip(field=x, type="quantitative", title=x_title or x),
               alt.Tooltip(field=y, type="quantitative", title=y_title or y, format=y_format)]
    enc: dict = dict(x=x_enc, y=y_enc, tooltip=tooltip)
    if color is not None:
        enc["color"] = alt.Color(field=color, type="nominal", title=color,
                                 scale=alt.Scale(scheme="tableau10"), legend=alt.Legend(orient="bottom"))
        tooltip.insert(0, alt.Tooltip(field=color, type="nominal", title=color))
    mark = alt.Chart(df, title=title or alt.Undefined).mark_line(point=points, strokeWidth=2)
    return mark.encode(**enc).properties(width=width, height=height)


def for_projector(spec: dict, scale: float = 1.5) -> dict:
    """A copy of a Vega-Lite spec readable from the back of a lecture hall.

    Fonts of axes, legends, titles and in-cell values grow by `scale`; heatmap
    cells and fixed-size charts grow too, so the larger labels still fit.
    The data is shared with the original spec, not copied.
    """

    def grow(node: Any) -> Any:
        if isinstance(node, list):
            return [grow(v) for v in node]
        if not isinstance(node, dict):
            return node
        out = {k: (v if k in ("datasets", "data") else grow(v)) for k, v in node.items()}
        mark = out.get("mark")
        if isinstance(mark, dict) and mark.get("type") == "text":
            out["mark"] = {**mark, "fontSize": round(mark.get("fontSize", 11) * scale)}
        for dim in ("width", "height"):
            size = out.get(dim)
            if isinstance(size, dict) and "step" in size:
                out[dim] = {**size, "step": round(size["step"] * scale)}
            elif isinstance(size, int | float):
                out[dim] = round(size * min(scale, 1.3))
        return out

    big = grow(spec)
    config = dict(big.get("config", {}))
    config["axis"] = {**config.get("axis", {}), "labelFontSize": round(11 * scale), "titleFontSize": round(12 * scale)}
    config["legend"] = {**config.get("legend", {}), "labelFontSize": round(10 * scale),
                        "titleFontSize": round(11 * scale)}
    config["header"] = {**config.get("header", {}), "labelFontSize": round(11 * scale),
                        "titleFontSize": round(12 * scale)}
    config["title"] = {**config.get("title", {}), "fontSize": round(13 * scale)}
    big["config"] = config
    return big
