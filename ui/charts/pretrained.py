"""The real-model page's charts: the grid of every head, one head's map and its lines between tokens.

Pure functions (no Streamlit), tested through the specs they return. Colours follow
`ui.charts.heatmap`: attention weights on viridis with the domain fixed to [0, 1], so every
map can be compared with every other by eye.

The attention charts are rebuilt on every rerun of a page whose input is free text,
and the 6 x 12 grid of heads carries tens of thousands of cells, so they are written
as plain Vega-Lite dicts whose named ``datasets`` are DataFrames: Streamlit sends
those as Arrow, while Altair would turn every row into a dict and validate its
objects against the schema on each call (docs/performance.md has the figure). The tests
validate the dicts against the Vega-Lite schema instead. The grid is ONE faceted
chart with small cells, no text and no axes (72 charts would cost 72 renders).
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

from ui.charts.heatmap import SEQUENTIAL_SCHEME, unique_labels
from ui.charts.palette import BLUE, ink
from ui.charts.spec import CANVAS
from ui.export import LAYOUT_KEY, matrix_layout

#: Name of the click selection on the head grid (``event.selection[GRID_SELECTION]``).
GRID_SELECTION = "pick"
#: The Vega-Lite schema the dict-built specs declare (Altair's own version).
VEGA_LITE_SCHEMA = alt.SCHEMA_URL
#: Colour of the head-view lines.
LINE_COLOR = BLUE


def _weight_color(field: str = "weight") -> dict:
    return {"field": field, "type": "quantitative", "title": "weight",
            "scale": {"scheme": SEQUENTIAL_SCHEME, "domain": [0.0, 1.0]},
            "legend": {"orient": "right", "gradientLength": 120}}


def _tooltip(*fields: tuple[str, str, str]) -> list[dict]:
    return [{"field": f, "type": t, "title": title, **({"format": ".3f"} if t == "quantitative" else {})}
            for f, t, title in fields]


def grid_frame(weights: np.ndarray, tokens: Sequence[str]) -> pd.DataFrame:
    """Long-form table of ``(L, H, T, T)`` attention weights, one row per cell.

    Columns: ``layer`` and ``head`` (1-based), ``i`` (query position), ``j`` (key position),
    ``query`` and ``key`` (token labels, categorical) and ``weight`` (float32).
    """
    w = np.asarray(weights)
    if w.ndim != 4 or w.shape[-1] != w.shape[-2]:
        raise ValueError(f"weights must have shape (layers, heads, T, T), got {w.shape}.")
    n_layers, n_heads, t, _ = w.shape
    if len(tokens) != t:
        raise ValueError(f"{len(tokens)} tokens for attention maps of shape {w.shape}.")
    labels = pd.Categorical(unique_labels(tokens))
    flat = np.arange(w.size)
    lh, rest = np.divmod(flat, t * t)
    layer, head = np.divmod(lh, n_heads)
    i, j = np.divmod(rest, t)
    small = np.int16 if t * max(n_layers, n_heads) < 32_000 else np.int32
    return pd.DataFrame({
        "layer": (layer + 1).astype(small), "head": (head + 1).astype(small),
        "i": i.astype(small), "j": j.astype(small),
        "query": labels.take(i), "key": labels.take(j), "weight": w.ravel().astype(np.float32),
    })


def attention_grid(weights: np.ndarray, tokens: Sequence[str], *, panel_px: int = 64, title: str = "") -> dict:
    """Every head of every layer as a small attention map: rows = layers, columns = heads (a Vega-Lite dict).

    One viridis scale on [0, 1] for all maps; no text in the cells (tooltips carry the
    tokens and the weight). Clicking a map selects its (layer, head) in the point
    selection named `GRID_SELECTION`. The cells are the dataset ``"attention_grid"`` (`grid_frame`);
    every map exports as a matrix, titled ``"layer l, head h (grid)"`` (`ui.export.matrix_layout`).
    """
    df = grid_frame(weights, tokens)
    n_layers, n_heads, t = np.shape(weights)[:3]
    labels = unique_labels(tokens)
    maps = matrix_layout((n_layers * n_heads, t, t),  # grid_frame's rows: layer, head, query, key, row-major
                         [f"layer {li + 1}, head {h + 1} (grid)" for li in range(n_layers) for h in range(n_heads)],
                         labels, labels, name=title or "attention grid", field="weight")
    step = max(2, round(panel_px / len(tokens)))
    cells = {
        "width": {"step": step}, "height": {"step": step},
        "mark": {"type": "rect"},
        "params": [{"name": GRID_SELECTION, "select": {"type": "point", "fields": ["layer", "head"], "on": "click",
                                                       "clear": False}}],
        "encoding": {
            "x": {"field": "j", "type": "ordinal", "axis": None},
            "y": {"field": "i", "type": "ordinal", "axis": None},
            "color": _weight_color(),
            "tooltip": _tooltip(("layer", "ordinal", "layer"), ("head", "ordinal", "head"),
                                ("query", "nominal", "query token"), ("key", "nominal", "key token"),
                                ("weight", "quantitative", "weight")),
        },
    }
    spec = {
        "$schema": VEGA_LITE_SCHEMA, "data": {"name": "attention_grid"},
        "facet": {
            "row": {"field": "layer", "type": "ordinal", "title": None,
                    "header": {"labelExpr": "'layer ' + datum.value", "labelAngle": 0, "labelAlign": "right",
                               "labelFontSize": 11}},
            "column": {"field": "head", "type": "ordinal", "title": None,
                       "header": {"labelExpr": "'head ' + datum.value", "labelFontSize": 11}},
        },
        "spacing": {"row": 4, "column": 4},
        "spec": cells,
        "datasets": {"attention_grid": df},
        "usermeta": {LAYOUT_KEY: [maps]},
    }
    if title:
        spec["title"] = title
    return spec


def attention_panels(maps: np.ndarray, names: Sequence[str], tokens: Sequence[str], *, columns: int = 4,
                     cell_px: int = 14, title: str = "") -> dict:
    """Several ``(T, T)`` attention maps with token labels, `columns` to a row, one [0, 1] viridis scale.

    A Vega-Lite dict; the cells are the dataset ``"attention_panels"`` (columns panel, query, key, i, j, weight).
    Every panel exports as a matrix titled with its name (`ui.export.matrix_layout`).
    """
    m = np.asarray(maps, dtype=np.float64)
    if m.ndim != 3 or m.shape[1] != m.shape[2] or len(names) != m.shape[0]:
        raise ValueError(f"maps must be (P, T, T) with P names, got shape {m.shape} and {len(names)} names.")
    t = m.shape[1]
    if len(tokens) != t:
        raise ValueError(f"{len(tokens)} tokens for maps of shape {m.shape}.")
    labels = np.asarray(unique_labels(tokens), dtype=object)
    p, rest = np.divmod(np.arange(m.size), t * t)
    i, j = np.divmod(rest, t)
    df = pd.DataFrame({"panel": np.asarray(names, dtype=object)[p], "query": labels[i], "key": labels[j],
                       "i": i, "j": j, "weight": m.ravel()})
    readable = cell_px >= 9
    cells = {
        "width": {"step": cell_px}, "height": {"step": cell_px},
        "mark": {"type": "rect"},
        "encoding": {
            "x": {"field": "key", "type": "ordinal", "sort": None, "title": "key token",
                  "axis": {"labels": readable, "ticks": readable, "labelAngle": -90, "labelFontSize": 10}},
            "y": {"field": "query", "type": "ordinal", "sort": None, "title": "query token",
                  "axis": {"labels": readable, "ticks": readable, "labelFontSize": 10}},
            "color": _weight_color(),
            "tooltip": _tooltip(("panel", "nominal", "map"), ("query", "nominal", "query token"),
                                ("key", "nominal", "key token"), ("weight", "quantitative", "weight")),
        },
    }
    spec = {
        "$schema": VEGA_LITE_SCHEMA, "data": {"name": "attention_panels"},
        "facet": {"field": "panel", "type": "nominal", "sort": list(names), "title": None,
                  "header": {"labelFontSize": 12, "labelFontWeight": "bold"}},
        "columns": columns, "spacing": 16, "spec": cells,
        "datasets": {"attention_panels": df},
        "usermeta": {LAYOUT_KEY: [matrix_layout(m.shape, names, list(labels), list(labels),
                                                name=title or "attention panels", field="weight")]},
    }
    if title:
        spec["title"] = title
    return spec


def map_cell_px(t: int, max_labelled: int = 14) -> int:
    """Cell size of `head_map` for `t` tokens (also the row height that lines a `head_view` up with it)."""
    return 30 if t <= max_labelled else max(14, 420 // t)


def head_view_frame(weights: np.ndarray, tokens: Sequence[str], min_weight: float = 0.01) -> pd.DataFrame:
    """The lines of a head view: one row per (query i, key j) with weight ≥ `min_weight`."""
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 2 or w.shape[0] != w.shape[1] or len(tokens) != w.shape[0]:
        raise ValueError(f"a head view needs a (T, T) matrix and T tokens, got {w.shape} and {len(tokens)} tokens.")
    labels = np.asarray(unique_labels(tokens), dtype=object)
    i, j = np.nonzero(w >= min_weight)
    return pd.DataFrame({"i": i, "j": j, "query": labels[i], "key": labels[j], "weight": w[i, j],
                         "x0": 0.0, "x1": 1.0})


def head_map(weights: np.ndarray, tokens: Sequence[str], *, title: str, max_labelled: int = 14) -> tuple[dict, dict]:
    """One head's ``(T, T)`` map, large: a Vega-Lite view dict and its dataset ``{"head_map": frame}``.

    The same picture as `ui.charts.heatmap` (weights on viridis [0, 1], values printed in the
    cells up to `max_labelled` tokens) with vertical key labels, written as a plain dict:
    it is rebuilt on every rerun, and Altair's objects cost more than the chart is worth here.
    The frame has the columns of `ui.charts.heatmap.matrix_frame` (row, col, i, j, value) plus ``ink`` and ``title``.
    """
    w = np.asarray(weights, dtype=np.float64)
    t = len(tokens)
    if w.shape != (t, t):
        raise ValueError(f"head_map needs a (T, T) matrix for T={t} tokens, got shape {w.shape}.")
    labels = np.asarray(unique_labels(tokens), dtype=object)
    i, j = np.divmod(np.arange(t * t), t)
    df = pd.DataFrame({"row": labels[i], "col": labels[j], "i": i, "j": j, "value": w.ravel()})
    df["ink"] = ink(SEQUENTIAL_SCHEME, df["value"].to_numpy())  # black or white, whichever reads better
    df["title"] = title  # in the data, not the spec: it names the layer and head the sliders chose
    cell = map_cell_px(t, max_labelled)
    layers: list[dict] = [{
        "mark": {"type": "rect", "stroke": "white", "strokeWidth": 1},
        "encoding": {"color": {"field": "value", "type": "quantitative", "title": "weight",
                               "scale": {"scheme": SEQUENTIAL_SCHEME, "domain": [0.0, 1.0]},
                               "legend": {"orient": "right", "gradientLength": 120}}},
    }]
    if t <= max_labelled:
        layers.append({"mark": {"type": "text", "fontSize": 9},
                       "encoding": {"text": {"field": "value", "type": "quantitative", "format": ".2f"},
                                    "color": {"field": "ink", "type": "nominal", "scale": None}}})
    view = {
        "title": {"text": {"expr": "data('head_map')[0].title"}}, "data": {"name": "head_map"},
        "width": {"step": cell}, "height": {"step": cell},
        "encoding": {
            "x": {"field": "col", "type": "ordinal", "sort": None, "title": "key token",
                  "axis": {"orient": "top", "labelAngle": -90}},
            "y": {"field": "row", "type": "ordinal", "sort": None, "title": "query token"},
            "tooltip": _tooltip(("row", "nominal", "query token"), ("col", "nominal", "key token"),
                                ("value", "quantitative", "weight")),
        },
        "layer": layers,
        # The text layer's colour is the ink itself (scale null): it must not merge with the weight scale.
        "resolve": {"scale": {"color": "independent"}},
    }
    return view, {"head_map": df}


def head_view(weights: np.ndarray, tokens: Sequence[str], *, title: str = "", min_weight: float = 0.01,
              row_px: int = 18, width: int = 300, max_stroke: float = 6.0) -> tuple[dict, dict]:
    """BertViz-style head view: each token on the left is joined to the tokens it attends to on the right.

    Line thickness and opacity are the weight (lines below `min_weight` are left out).
    Hovering a token on the left keeps only its lines. Returns a Vega-Lite view dict and its
    datasets (``"head_view_lines"``: `head_view_frame`; ``"head_view_tokens"``).
    """
    lines = head_view_frame(weights, tokens, min_weight)
    t = len(tokens)
    words = pd.DataFrame({"i": np.arange(t), "token": unique_labels(tokens), "left": 0.0, "right": 1.0})
    x_scale = {"domain": [-0.55, 1.55]}
    y = {"field": "i", "type": "quantitative", "scale": {"domain": [-0.5, t - 0.5], "reverse": True}, "axis": None}
    weight_scale = {"domain": [0.0, 1.0]}
    rules = {
        "data": {"name": "head_view_lines"},
        "mark": {"type": "rule", "color": LINE_COLOR},
        "encoding": {
            "x": {"field": "x0", "type": "quantitative", "scale": x_scale, "axis": None},
            "x2": {"field": "x1"}, "y": y, "y2": {"field": "j"},
            "strokeWidth": {"field": "weight", "type": "quantitative", "legend": None,
                            "scale": {**weight_scale, "range": [0.5, max_stroke]}},
            # Hovering a token keeps its lines; with nothing hovered every line shows.
            "opacity": {"condition": {"param": "token_hover", "field": "weight", "type": "quantitative",
                                      "legend": None, "scale": {**weight_scale, "range": [0.15, 1.0]}},
                        "value": 0.03},
            "tooltip": _tooltip(("query", "nominal", "query token"), ("key", "nominal", "key token"),
                                ("weight", "quantitative", "weight")),
        },
    }

    def labels(side: str, align: str, dx: int) -> dict:
        return {"data": {"name": "head_view_tokens"},
                "mark": {"type": "text", "align": align, "dx": dx, "fontSize": 12},
                "encoding": {"x": {"field": side, "type": "quantitative", "scale": x_scale, "axis": None}, "y": y,
                             "text": {"field": "token", "type": "nominal"}}}

    left = labels("left", "right", -6)
    left["params"] = [{"name": "token_hover",
                       "select": {"type": "point", "fields": ["i"], "on": "pointerover", "clear": "pointerout"}}]
    left["encoding"]["tooltip"] = [{"field": "token", "type": "nominal", "title": "hover: this token's lines only"}]
    view = {"width": width, "height": max(120, row_px * t), "view": {"stroke": None},
            "layer": [rules, left, labels("right", "left", 6)]}
    if title:
        view["title"] = title
    return view, {"head_view_lines": lines, "head_view_tokens": words}


def close_up(weights: np.ndarray, tokens: Sequence[str], *, title: str) -> dict:
    """One head's map (`head_map`) next to its `head_view`, rows lined up: a Vega-Lite dict with its datasets.

    Drawn on a canvas (`ui.charts.spec.CANVAS`): the head view is T² lines, all redrawn when the layer or head changes.
    """
    heat, heat_data = head_map(weights, tokens, title=title)
    view, view_data = head_view(weights, tokens, title="head view: query → key", row_px=map_cell_px(len(tokens)))
    return {"$schema": VEGA_LITE_SCHEMA, "hconcat": [heat, view], "spacing": 40,
            "resolve": {"scale": {"color": "independent"}}, "datasets": {**heat_data, **view_data},
            "usermeta": CANVAS}


def averaged_heads(weights: np.ndarray, tokens: Sequence[str]) -> dict:
    """Each layer's mean over its heads, then the mean over every head, as panels of maps.

    `weights` is ``(L, H, T, T)``, the model's attention of every layer and head.
    """
    n_layers, n_heads, n_tokens, _ = weights.shape
    means = np.concatenate([weights.mean(axis=1), weights.mean(axis=(0, 1))[None]])  # (L+1, T, T)
    names = [f"layer {k + 1}: mean of {n_heads} heads" for k in range(n_layers)] + [f"all {n_layers * n_heads} heads"]
    return attention_panels(means, names, tokens, columns=4, cell_px=max(6, min(16, 240 // n_tokens)))

