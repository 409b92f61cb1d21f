"""`ui.charts.pretrained`: the dict-built attention charts (schema-valid, compiled by Vega-Lite)."""

import json

import numpy as np
import pandas as pd
import pytest
import vl_convert as vlc
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

from ui.charts.heatmap import unique_labels
from ui.charts.palette import SEQUENTIAL_SCHEME
from ui.charts.pretrained import (
    GRID_SELECTION,
    attention_grid,
    attention_panels,
    close_up,
    grid_frame,
    head_map,
    head_view,
    head_view_frame,
    map_cell_px,
)
from ui.charts.spec import view_title
from ui.export import chart_matrices, matrix_titles

TOKENS = ["[CLS]", "the", "cat", "the", "[SEP]"]


def weights(shape, seed=0):
    """Random attention weights of `shape` (..., T, T): every row on the simplex."""
    return np.random.default_rng(seed).dirichlet(np.ones(shape[-1]), size=shape[:-1])


def as_json(spec: dict) -> dict:
    """The spec with its DataFrames as row lists, as the browser receives it."""
    out = dict(spec)
    out["datasets"] = {k: json.loads(v.to_json(orient="records")) for k, v in spec["datasets"].items()}
    return out


def check_valid(spec: dict) -> dict:
    """Schema-valid and compilable by Vega-Lite itself (catches what the schema allows but Vega-Lite rejects)."""
    data = as_json(spec)
    validate_jsonschema(data, load_schema())
    assert vlc.vegalite_to_svg(data).startswith("<svg")
    return data


def test_grid_frame_is_layer_head_query_key():
    w = weights((2, 3, 5, 5))
    df = grid_frame(w, TOKENS)
    assert len(df) == 2 * 3 * 25 and set(df.columns) == {"layer", "head", "i", "j", "query", "key", "weight"}
    row = df[(df["layer"] == 2) & (df["head"] == 3) & (df["i"] == 1) & (df["j"] == 4)].iloc[0]
    assert row["weight"] == pytest.approx(w[1, 2, 1, 4]) and row["query"] == "the (1)" and row["key"] == "[SEP]"
    with pytest.raises(ValueError, match=r"\(layers, heads, T, T\)"):
        grid_frame(np.ones((3, 5, 5)), TOKENS)
    with pytest.raises(ValueError, match="4 tokens"):
        grid_frame(w, TOKENS[:4])


def test_attention_grid_is_one_faceted_chart_on_a_fixed_scale():
    w = weights((6, 12, 5, 5))
    spec = attention_grid(w, TOKENS, title="grid")
    data = check_valid(spec)
    assert spec["facet"]["row"]["field"] == "layer" and spec["facet"]["column"]["field"] == "head"
    cell = spec["spec"]
    assert cell["mark"]["type"] == "rect" and "layer" not in cell  # no text layer
    assert cell["encoding"]["x"]["axis"] is None and cell["encoding"]["y"]["axis"] is None
    color = cell["encoding"]["color"]
    assert color["scale"] == {"scheme": SEQUENTIAL_SCHEME, "domain": [0.0, 1.0]}
    assert cell["params"][0]["name"] == GRID_SELECTION
    assert cell["params"][0]["select"]["fields"] == ["layer", "head"]
    assert len(data["datasets"]["attention_grid"]) == 6 * 12 * 25


def test_head_map_matches_the_matrix_and_prints_small_ones():
    w = weights((5, 5))
    view, frames = head_map(w, TOKENS, title="layer 1, head 1")
    df = frames["head_map"]
    np.testing.assert_allclose(df.sort_values(["i", "j"])["value"].to_numpy().reshape(5, 5), w)
    assert [layer["mark"]["type"] for layer in view["layer"]] == ["rect", "text"]
    assert view["resolve"] == {"scale": {"color": "independent"}}
    assert view["width"] == {"step": map_cell_px(5)}
    big_view, _ = head_map(weights((20, 20)), [f"t{k}" for k in range(20)], title="big")
    assert [layer["mark"]["type"] for layer in big_view["layer"]] == ["rect"]  # no text on a big map
    with pytest.raises(ValueError, match=r"\(T, T\) matrix for T=4"):
        head_map(w, TOKENS[:4], title="x")


def test_head_view_draws_one_line_per_noticeable_weight():
    w = np.array([[1.0, 0.0, 0.0], [0.5, 0.495, 0.005], [0.2, 0.3, 0.5]])
    lines = head_view_frame(w, ["a", "b", "c"], min_weight=0.01)
    assert len(lines) == 6 and lines["weight"].min() >= 0.01
    assert set(zip(lines["i"], lines["j"], strict=True)) == {(0, 0), (1, 0), (1, 1), (2, 0), (2, 1), (2, 2)}
    view, frames = head_view(w, ["a", "b", "c"], title="hv")
    rules, left, right = view["layer"]
    assert rules["mark"]["type"] == "rule" and rules["encoding"]["strokeWidth"]["field"] == "weight"
    assert rules["encoding"]["opacity"]["condition"]["param"] == "token_hover"
    assert left["params"][0]["name"] == "token_hover"
    assert list(frames["head_view_tokens"]["token"]) == ["a", "b", "c"]
    with pytest.raises(ValueError, match="a head view needs"):
        head_view_frame(w, ["a", "b"])


def test_close_up_compiles_with_both_views():
    spec = close_up(weights((5, 5)), TOKENS, title="layer 2, head 3")
    check_valid(spec)
    assert len(spec["hconcat"]) == 2 and view_title(spec["hconcat"][0], spec["datasets"]) == "layer 2, head 3"
    assert spec["hconcat"][0]["title"] == {"text": {"expr": "data('head_map')[0].title"}}  # the sliders' choice is data
    assert set(spec["datasets"]) == {"head_map", "head_view_lines", "head_view_tokens"}


def test_attention_panels_one_per_map_in_order():
    maps = weights((3, 5, 5))
    names = ["layer 1: mean", "layer 2: mean", "all"]
    spec = attention_panels(maps, names, TOKENS, columns=2)
    data = check_valid(spec)
    assert spec["facet"]["field"] == "panel" and spec["facet"]["sort"] == names and spec["columns"] == 2
    rows = pd.DataFrame(data["datasets"]["attention_panels"])
    assert len(rows) == 75 and rows.groupby("panel")["weight"].sum().round(6).eq(5.0).all()
    with pytest.raises(ValueError, match="P names"):
        attention_panels(maps, names[:2], TOKENS)


def test_grid_and_panels_export_every_map_as_a_labelled_matrix():
    """The export menu offers each map of the grid and of the averages, read back from the chart's own data."""
    w = weights((2, 3, 5, 5))
    grid = attention_grid(w, TOKENS, title="2 layers × 3 heads")
    check_valid(grid)  # usermeta is allowed at the top level
    titles = matrix_titles(grid)
    assert titles == [f"layer {li}, head {h} (grid)" for li in (1, 2) for h in (1, 2, 3)]
    exported = {title: (m, rows, cols) for title, m, rows, cols in chart_matrices(grid)}
    matrix, rows, cols = exported["layer 2, head 3 (grid)"]
    np.testing.assert_allclose(matrix, w[1, 2], atol=1e-7)  # the grid carries float32 weights
    assert rows == cols == unique_labels(TOKENS)  # the axis labels, repeated words told apart

    maps = weights((3, 5, 5), seed=1)
    panels = attention_panels(maps, ["layer 1: mean", "layer 2: mean", "all"], TOKENS)
    exported = {title: m for title, m, _, _ in chart_matrices(panels)}
    assert list(exported) == ["layer 1: mean", "layer 2: mean", "all"]
    np.testing.assert_array_equal(exported["layer 2: mean"], maps[1])


def test_charts_with_dataframes_export_as_images():
    """The page's specs carry DataFrames (sent as Arrow); the export converts them for the renderer."""
    from ui.export import chart_to_png, chart_to_svg, spec_of

    spec = attention_grid(weights((2, 3, 5, 5)), TOKENS, title="grid")
    assert isinstance(spec["datasets"]["attention_grid"], pd.DataFrame)
    assert spec_of(spec)["datasets"]["attention_grid"] == as_json(spec)["datasets"]["attention_grid"]
    assert isinstance(spec["datasets"]["attention_grid"], pd.DataFrame)  # the page's own spec is left as it was
    png = chart_to_png(spec)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000
    assert chart_to_svg(close_up(weights((5, 5)), TOKENS, title="close")).startswith("<svg")
