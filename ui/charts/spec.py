"""Vega-Lite specs as the app draws them: stable across slider steps, and readable on a projector.

A colour domain or a title that depends on the numbers is read from the chart's own data
(`domain_from_data`, `title_from_data`), not written into the spec. `to_spec` then names the datasets by
position (Altair names them by a hash of their content) and resolves `THIS_DATA`, so moving a slider changes
only a chart's data, and the browser updates the drawn chart in place instead of compiling it again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import pandas as pd

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
        spec = line.to_dict(validate=False)  # the test suite validates whole specs
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


#: How every chart is sized: its plot at the width and height it asks for, with the title, axes and legends
#: around it. Streamlit's default for a spec without one, ``fit``, squeezes all of them into that size instead,
#: which leaves a fixed-height chart with a legend under it almost no plot.
AUTOSIZE = {"type": "pad"}


def at_its_own_size(spec: dict) -> dict:
    """`spec` sized by `AUTOSIZE`, unless it says otherwise (the data is shared, not copied)."""
    return spec if "autosize" in spec else {**spec, "autosize": AUTOSIZE}


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


#: The smallest chart text the app draws, in CSS px: still readable on a phone held at arm's length. Streamlit's
#: theme draws axis, legend and header labels at 12 px; only sizes a chart sets itself can be smaller.
MIN_FONT_PX = 11
_FONT_KEYS = ("fontSize", "labelFontSize", "titleFontSize", "subtitleFontSize")


def readable_text(spec: dict[str, Any], min_px: int = MIN_FONT_PX) -> dict[str, Any]:
    """`spec` with every font size it sets raised to at least `min_px` (a copy; the data is shared, not walked).

    Every mark, axis, legend, header and title of the spec, its config included. A size set by a
    Vega expression is left as it is.
    """

    def floor(node: Any) -> Any:
        if isinstance(node, list):
            return [floor(v) for v in node]
        if not isinstance(node, dict):
            return node
        return {k: (v if k in ("datasets", "data") else
                    max(v, min_px) if k in _FONT_KEYS and isinstance(v, int | float) else floor(v))
                for k, v in node.items()}

    return floor(spec)


def font_sizes(spec: dict[str, Any]) -> list[float]:
    """Every font size `spec` sets (outside its data), in CSS px."""
    found: list[float] = []

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for v in node:
                walk(v)
        elif isinstance(node, dict):
            for k, v in node.items():
                if k in _FONT_KEYS and isinstance(v, int | float):
                    found.append(v)
                elif k not in ("datasets", "data"):
                    walk(v)

    walk(spec)
    return found
