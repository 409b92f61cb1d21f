"""Exports for slides: charts as PNG/SVG (rendered server-side by vl-convert), matrices as CSV/LaTeX.

Pure functions, no Streamlit: a chart spec or a matrix in, bytes or text out.

A chart spec carries its matrices in one of two ways, and `chart_matrices` reads both:

* a `ui.charts.heatmap` view: one record per cell with its indices and labels (``i``, ``j``,
  ``row``, ``col``, ``value``);
* a faceted chart of `ui.charts.facets`: its data is only the cell values, one ``{"value": x}``
  record per cell, and the spec's ``usermeta`` says how to cut them into matrices
  (`matrix_layout`), so the export needs no per-cell indices or labels in the data.
"""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ui.charts.inline_data import Rows
from ui.charts.spec import stable_spec, view_title


def spec_of(chart: Any) -> dict:
    """The Vega-Lite spec (JSON-ready) of an Altair chart or of a spec dict.

    A dict's datasets may be `Rows` (the chart modules' columns) or DataFrames (a page test's); the renderer
    needs records, so they are converted here, at export time only.
    """
    spec = stable_spec(chart if isinstance(chart, dict) else chart.to_dict())  # resolves `THIS_DATA`
    datasets = spec.get("datasets", {})
    if any(not isinstance(d, list) for d in datasets.values()):
        spec = {**spec, "datasets": {name: _records(d) for name, d in datasets.items()}}
    return spec


def _records(data: Any) -> Any:
    """A dataset as JSON-ready records: `Rows` made into rows, a DataFrame through its JSON."""
    if isinstance(data, Rows):
        return data.rows()
    if isinstance(data, pd.DataFrame):
        return json.loads(data.to_json(orient="records"))
    return data


def chart_to_png(chart: Any, scale: float = 2.0) -> bytes:
    """Render a chart to PNG bytes; ``scale=2`` gives crisp slides."""
    import vl_convert as vlc

    return vlc.vegalite_to_png(spec_of(chart), scale=scale)


def chart_to_svg(chart: Any) -> str:
    """Render a chart to an SVG document."""
    import vl_convert as vlc

    return vlc.vegalite_to_svg(spec_of(chart))


def matrix_to_csv(matrix: np.ndarray, row_labels: Sequence[str] | None = None,
                  col_labels: Sequence[str] | None = None) -> str:
    """The matrix as CSV with a header row and a label column, full float precision."""
    m = np.asarray(matrix, dtype=np.float64)
    df = pd.DataFrame(m, index=list(row_labels) if row_labels is not None else None,
                      columns=list(col_labels) if col_labels is not None else None)
    buf = io.StringIO()
    df.to_csv(buf, float_format="%.17g")
    return buf.getvalue()


def matrix_to_latex(matrix: np.ndarray, decimals: int = 3) -> str:
    r"""The matrix as a LaTeX ``bmatrix``, one row per line, rounded to `decimals`."""
    m = np.asarray(matrix, dtype=np.float64)
    if m.ndim == 1:
        m = m[None, :]
    rows = [" & ".join(f"{x:.{decimals}f}".replace("-0." + "0" * decimals, "0." + "0" * decimals) for x in r)
            for r in m]
    return "\\begin{bmatrix}\n" + " \\\\\n".join(rows) + "\n\\end{bmatrix}"


#: Key of the matrix layouts in a spec's ``usermeta`` (Vega-Lite ignores ``usermeta``; it is ours).
LAYOUT_KEY = "matrices"

#: A matrix found in a chart, not read yet: ``(title, load)``, ``load() -> (matrix, row labels, col labels)``.
MatrixSource = tuple[str, Callable[[], tuple[np.ndarray, list[str], list[str]]]]


def _views(spec: dict) -> list[dict]:
    """The views of a chart: the sub-charts of a concatenation, or the chart itself."""
    return spec.get("hconcat") or spec.get("vconcat") or spec.get("concat") or [spec]


def _leaf_views(spec: dict) -> list[dict]:
    """The views of a chart that are not themselves concatenations, in reading order (rows of a column of rows)."""
    views = _views(spec)
    if views == [spec]:
        return views
    return [leaf for view in views for leaf in _leaf_views(view)]


def _data_of(spec: dict, view: dict) -> Any:
    """The dataset a view draws (its own, or the chart's): records, or a DataFrame in a page test."""
    name = view.get("data", {}).get("name") or spec.get("data", {}).get("name")
    return spec.get("datasets", {}).get(name)


def _fields(data: Any) -> set[str]:
    """The field names of a dataset given as records or as a DataFrame (empty if there is no data)."""
    if isinstance(data, pd.DataFrame | Rows):
        return set(data.columns)
    return set(data[0]) if data else set()


def _heatmap_matrix(data: Any) -> tuple[np.ndarray, list[str], list[str]]:
    """A `ui.charts.heatmap` dataset (one record per cell, with ``i``, ``j``, ``row``, ``col``) as a labelled matrix."""
    df = _frame(data).sort_values(["i", "j"])
    n_rows, n_cols = int(df["i"].max()) + 1, int(df["j"].max()) + 1
    rows = df.drop_duplicates("i")["row"].astype(str).tolist()
    cols = df.drop_duplicates("j").sort_values("j")["col"].astype(str).tolist()
    return df["value"].to_numpy(dtype=np.float64).reshape(n_rows, n_cols), rows, cols


def _heatmap_sources(spec: dict) -> Iterator[MatrixSource]:
    """Every `ui.charts.heatmap` view of a chart, titled by the view's title (or its place)."""
    for k, view in enumerate(_leaf_views(spec)):
        data = _data_of(spec, view)
        if {"i", "j", "value"} <= _fields(data):
            title = view_title(view, spec.get("datasets", {})) or f"matrix {k + 1}"
            yield title, functools.partial(_heatmap_matrix, data)


def _tooltip_lines(view: dict) -> list[dict]:
    """A view's tooltip channel (on the view or on one of its layers), as a list of field definitions."""
    for node in (view, *view.get("layer", [])):
        tooltip = node.get("encoding", {}).get("tooltip")
        if tooltip:
            return tooltip if isinstance(tooltip, list) else [tooltip]
    return []


def tooltip_tables(spec: dict) -> Iterator[tuple[str, pd.DataFrame]]:
    """The arithmetic a heatmap's tooltip shows, as tables: one per extra tooltip line
    (`ui.charts.heatmap.extra_tooltip_lines`, the fields ``x0, x1, …``), labelled like the matrix.

    ``(title, table)``: the title is the matrix's and the line's ("attention weights A: row sum of exp").
    """
    for k, view in enumerate(_leaf_views(spec)):
        data = _data_of(spec, view)
        fields = _fields(data)
        lines = [t for t in _tooltip_lines(view) if str(t.get("field", "")).startswith("x") and t["field"] in fields]
        if not lines or not {"i", "j", "value"} <= fields:
            continue
        title = view_title(view, spec.get("datasets", {})) or f"matrix {k + 1}"
        _, rows, cols = _heatmap_matrix(data)
        df = _frame(data).sort_values(["i", "j"])
        for line in lines:
            cells = df[line["field"]].to_numpy().reshape(len(rows), len(cols))
            if np.issubdtype(cells.dtype, np.number):
                cells = np.round(cells.astype(np.float64), 4)
            yield f"{title}: {line.get('title', line['field'])}", pd.DataFrame(cells, index=rows, columns=cols)


#: Marks whose values a table can list. Where one view draws the same fields of one dataset twice, the layer split
#: into the most series wins, then the first kind here.
_SERIES_MARKS = {"point": 0, "circle": 0, "bar": 1, "line": 2}


def _series_of(enc: dict, facet_field: str | None, x: str, y: str) -> list[str]:
    """The fields that split a layer's values into series: a nominal colour or x offset, and the facet."""
    split = [facet_field] + [enc.get(c, {}).get("field") for c in ("color", "xOffset")
                             if enc.get(c, {}).get("type") in ("nominal", "ordinal")]
    return list(dict.fromkeys(f for f in split if f and f not in (x, y)))


def _tooltip_columns(enc: dict) -> dict[str, str]:
    """The fields a layer's tooltip shows, with their titles."""
    tooltip = enc.get("tooltip", [])
    lines = tooltip if isinstance(tooltip, list) else [tooltip]
    return {t["field"]: t.get("title", t["field"]) for t in lines if isinstance(t, dict) and "field" in t}


def _only_filters(node: dict) -> bool:
    """A layer with no transform, or only filters: it draws some of its dataset's rows, not values made anew."""
    return all("filter" in t for t in node.get("transform", []))


def series_tables(spec: dict) -> list[tuple[str, Callable[[], pd.DataFrame]]]:
    """The values a line, point or bar chart draws, as tables: ``(title, the function that builds the table)``.

    With several series at one x (a nominal colour, an x offset or facets): one row per x and one column per
    series. Otherwise one row per mark, with the columns its tooltip shows (or x and y). A layer whose values are
    computed in the browser (a transform other than a filter), or whose fields are not in its dataset, is left
    out. Finding the tables reads no data beyond each dataset's field names; building one reads its dataset.
    """
    datasets = spec.get("datasets", {})
    facet = spec.get("facet")
    facet_field = facet.get("field") if isinstance(facet, dict) else None
    found: dict[tuple, tuple[tuple[int, int], list[str], dict]] = {}

    def add(kind: str, data_name: str | None, enc: dict, title: str | None) -> None:
        x, y = enc.get("x", {}).get("field"), enc.get("y", {}).get("field")
        data = datasets.get(data_name) if data_name else None
        fields = _fields(data)
        series = _series_of(enc, facet_field, x, y)
        if not x or not y or not {x, y, *series} <= fields:
            return
        columns = {f: t for f, t in _tooltip_columns(enc).items() if f in fields} or {x: x, y: y}
        key, rank = (title, x, y, data_name), (-len(series), _SERIES_MARKS[kind])  # most series, then points
        if key not in found or rank < found[key][0]:
            found[key] = (rank, series, columns)

    def visit(node: Any, data_name: str | None, enc: dict, title: str | None) -> None:
        if isinstance(node, list):
            for item in node:
                visit(item, data_name, enc, title)
            return
        if not isinstance(node, dict):
            return
        if isinstance(node.get("data"), dict) and "name" in node["data"]:
            data_name = node["data"]["name"]
        enc = {**enc, **node.get("encoding", {})}
        own = node.get("title")
        title = own if isinstance(own, str) else own.get("text") if isinstance(own, dict) else title
        mark = node.get("mark")
        kind = mark if isinstance(mark, str) else mark.get("type") if isinstance(mark, dict) else None
        if kind in _SERIES_MARKS and _only_filters(node):
            add(kind, data_name, enc, title if isinstance(title, str) else None)
        for k in ("layer", "spec"):
            visit(node.get(k), data_name, enc, title)
        for k in ("hconcat", "vconcat", "concat"):
            visit(node.get(k), data_name, {}, None)

    visit(spec, None, {}, None)
    return [(title or f"{y} against {x}", functools.partial(_series_table, datasets[data_name], x, y, series, columns))
            for (title, x, y, data_name), (_, series, columns) in found.items()]


def _series_table(data: Any, x: str, y: str, series: list[str], columns: dict[str, str]) -> pd.DataFrame:
    """One `series_tables` table: numbers to 4 decimals, an absent value (no such series at that x) left blank.

    A column with a blank is text throughout (Arrow takes a column of one type: a mixed one would make Streamlit
    retry its conversion on every run)."""
    df = _frame(data)
    if series and df.duplicated(subset=[x, *series]).any():
        df = df.drop_duplicates(subset=[x, *series])  # a filtered layer's rows drawn twice (a marker on a curve)
    if series and df.duplicated(subset=[x]).any():  # several series at one x: a column each
        table = df.pivot_table(index=x, columns=list(series), values=y, aggfunc="first", sort=False)
        if pd.api.types.is_numeric_dtype(table.index):  # series drawn at different x: in the x axis's order
            table = table.sort_index()
    else:
        table = df[list(columns)].rename(columns=columns)
    numeric = table.select_dtypes("number").columns
    table[numeric] = table[numeric].round(4)
    for column in table.columns[table.isna().any()]:
        table[column] = [_cell_text(v) for v in table[column]]
    return table


def _cell_text(value: Any) -> str:
    """A table cell as text, as a numeric column prints it: a float to 4 decimals, a missing value blank."""
    if pd.isna(value):
        return ""
    return f"{value:.4f}" if isinstance(value, float | np.floating) else str(value)


def heatmap_matrices(spec: dict) -> Iterator[tuple[str, np.ndarray, list[str], list[str]]]:
    """Every `ui.charts.heatmap` matrix carried by a chart spec: ``(title, matrix, row labels, col labels)``."""
    for title, load in _heatmap_sources(spec):
        yield title, *load()


def matrix_layout(
    shape: Sequence[int],
    titles: Sequence[str],
    row_labels: Sequence[str] | Sequence[Sequence[str]],
    col_labels: Sequence[str] | Sequence[Sequence[str]],
    *,
    name: str = "",
    blocks: tuple[int, Sequence[str]] | None = None,
    field: str = "value",
) -> dict[str, Any]:
    """How a faceted chart's values make matrices: the ``usermeta`` entry that makes the chart exportable.

    The chart's dataset holds ``n = shape[0]`` matrices of ``shape[1] x shape[2]`` cells, one
    ``{field: x}`` record per cell, matrix after matrix, row-major (``np.stack(matrices).ravel()``).
    Put the result in the spec as ``usermeta={"matrices": [layout]}``; in a concatenation, add
    ``"view": k`` for the k-th sub-chart (``usermeta`` is only allowed at the top level).

    Args:
        shape: ``(n, rows, cols)``.
        titles: one title per matrix (they name the exported files).
        row_labels, col_labels: one list shared by every matrix, or one list per matrix.
        name: what the whole chart shows (names its PNG/SVG files); defaults to the titles.
        blocks: ``(width, titles)``: also export every matrix cut into column blocks of `width`
            (the columns each head reads), one title per block.
        field: the dataset column that holds the cell values (``"value"`` unless the chart names it otherwise).

    The layout has no ``width``/``height`` keys: presenter mode (`ui.charts.spec.for_projector`) enlarges
    those wherever they are in a spec.
    """
    n, n_rows, n_cols = (int(d) for d in shape)
    if len(titles) != n:
        raise ValueError(f"{len(titles)} titles for {n} matrices.")
    layout: dict[str, Any] = {"name": name or ", ".join(titles), "shape": [n, n_rows, n_cols],
                              "titles": list(titles), "rows": _labels_for(row_labels, n, n_rows, "row"),
                              "cols": _labels_for(col_labels, n, n_cols, "column")}
    if blocks is not None:
        width, block_titles = blocks
        if width < 1 or n_cols % width or len(block_titles) != n_cols // width:
            raise ValueError(f"{len(block_titles)} blocks of width {width} do not tile {n_cols} columns.")
        layout["blocks"] = {"columns": int(width), "titles": list(block_titles)}
    if field != "value":
        layout["field"] = field
    return layout


def _labels_for(labels: Sequence[str] | Sequence[Sequence[str]], n: int, size: int, axis: str) -> list:
    """`labels` as one shared list of strings or one list per matrix, checked against the shape."""
    per_matrix = len(labels) > 0 and not isinstance(labels[0], str)
    lists = [[str(x) for x in ls] for ls in labels] if per_matrix else [[str(x) for x in labels]]
    if (per_matrix and len(lists) != n) or any(len(ls) != size for ls in lists):
        raise ValueError(f"{axis} labels {list(labels)!r} do not fit {n} matrices of {size} {axis}s.")
    return lists if per_matrix else lists[0]


def _stack(data: Any, shape: tuple[int, ...], field: str = "value") -> np.ndarray:
    """A dataset of ``{field: x}`` records (or a DataFrame) as the stack of matrices it holds."""
    return _frame(data)[field].to_numpy(dtype=np.float64).reshape(shape)


def _frame(data: Any) -> pd.DataFrame:
    """A dataset (records, `Rows` or a DataFrame) as a DataFrame."""
    return pd.DataFrame(data.columns if isinstance(data, Rows) else data)


def _block(stack: Callable[[], np.ndarray], m: int, rows: list[str], cols: list[str],
           columns: slice) -> tuple[np.ndarray, list[str], list[str]]:
    """Matrix `m` of a stack, restricted to `columns`, with its labels."""
    return stack()[m][:, columns], rows, cols[columns]


def _layout_sources(spec: dict) -> Iterator[MatrixSource]:
    """Every matrix of every `matrix_layout` in the spec's ``usermeta`` (and every column block of it)."""
    views = _views(spec)
    for layout in spec.get("usermeta", {}).get(LAYOUT_KEY, []):
        data = _data_of(spec, views[layout["view"]] if "view" in layout else spec)
        stack = functools.cache(functools.partial(_stack, data, tuple(layout["shape"]),
                                                  layout.get("field", "value")))  # read once, if at all
        rows, cols = layout["rows"], layout["cols"]
        shared_rows, shared_cols = not rows or isinstance(rows[0], str), not cols or isinstance(cols[0], str)
        blocks = layout.get("blocks")
        for m, title in enumerate(layout["titles"]):
            m_rows, m_cols = rows if shared_rows else rows[m], cols if shared_cols else cols[m]
            yield title, functools.partial(_block, stack, m, m_rows, m_cols, slice(None))
            if blocks and len(blocks["titles"]) > 1:
                w = blocks["columns"]
                for b, block_title in enumerate(blocks["titles"]):
                    yield (f"{title} · {block_title}",
                           functools.partial(_block, stack, m, m_rows, m_cols, slice(b * w, (b + 1) * w)))


def _sources(spec: dict) -> list[MatrixSource]:
    """Every matrix of a chart, heatmap views first, each with the function that reads it."""
    return [*_heatmap_sources(spec), *_layout_sources(spec)]


def matrix_titles(spec: dict) -> list[str]:
    """The title of every matrix in a chart spec, in `chart_matrices` order, without reading the numbers.

    Only the first record of each dataset is looked at (is it a heatmap's?), so this is cheap enough
    for every rerun: the export menu lists these titles.
    """
    return [title for title, _ in _sources(spec)]


def chart_matrix(spec: dict, k: int) -> tuple[str, np.ndarray, list[str], list[str]]:
    """The `k`-th matrix of `chart_matrices`, reading only the data it needs."""
    title, load = _sources(spec)[k]
    return title, *load()


def chart_matrices(spec: dict) -> list[tuple[str, np.ndarray, list[str], list[str]]]:
    """Every matrix a chart spec carries, ``(title, matrix, row labels, col labels)``.

    Both kinds: `ui.charts.heatmap` views (cells with indices and labels) and faceted charts
    described by a `matrix_layout`. The datasets may be records (a spec as built) or DataFrames
    (a spec as a page test reads it back from the app).
    """
    return [(title, *load()) for title, load in _sources(spec)]
