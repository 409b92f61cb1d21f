"""Exports for slides: PNG and SVG render, CSV and LaTeX round-trip the numbers; the export menu offers them all."""

import io
import re

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers.apptest import run_page
from tests.helpers.exports import (
    download,
    export_menu_keys,
    open_export_menus,
    parse_csv,
    parse_latex,
    recorded_downloads,
)
from ui.charts.arrange import side_by_side
from ui.charts.heatmap import heatmap
from ui.export import (
    chart_matrices,
    chart_matrix,
    chart_to_png,
    chart_to_svg,
    heatmap_matrices,
    matrix_layout,
    matrix_titles,
    matrix_to_csv,
    matrix_to_latex,
)

M = np.array([[0.509, -0.196], [1.25, 0.0]])


def test_png_is_a_real_png_of_plausible_size():
    png = chart_to_png(heatmap(M, row_labels=["a", "b"], col_labels=["x", "y"]))
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert 100 < width < 2000 and 100 < height < 2000


def test_svg_is_an_svg_with_the_values_printed():
    svg = chart_to_svg(heatmap(M))
    assert svg.lstrip().startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert "0.509" in svg and "1.250" in svg


def test_csv_round_trips_exactly():
    m = np.random.default_rng(0).normal(size=(3, 4))
    csv = matrix_to_csv(m, ["the", "cat", "sat"], ["d0", "d1", "d2", "d3"])
    back = pd.read_csv(io.StringIO(csv), index_col=0)
    assert list(back.index) == ["the", "cat", "sat"] and list(back.columns) == ["d0", "d1", "d2", "d3"]
    np.testing.assert_array_equal(back.to_numpy(), m)


def test_latex_bmatrix_round_trips_to_its_decimals():
    m = np.random.default_rng(1).normal(size=(3, 2))
    tex = matrix_to_latex(m)
    assert tex.startswith("\\begin{bmatrix}") and tex.endswith("\\end{bmatrix}")
    body = tex.removeprefix("\\begin{bmatrix}\n").removesuffix("\n\\end{bmatrix}")
    back = np.array([[float(x) for x in row.split("&")] for row in body.split("\\\\")])
    np.testing.assert_allclose(back, np.round(m, 3), atol=1e-12)
    assert not re.search(r"-0\.000", matrix_to_latex(np.array([[-1e-9]])))  # no negative zero


def test_heatmap_matrices_are_recovered_from_a_spec():
    spec = side_by_side(heatmap(M, title="A", row_labels=["a", "b"]), heatmap(M.T, title="B")).to_dict()
    found = {title: (m, rows) for title, m, rows, _ in heatmap_matrices(spec)}
    np.testing.assert_array_equal(found["A"][0], M)
    np.testing.assert_array_equal(found["B"][0], M.T)
    assert found["A"][1] == ["a", "b"]


def test_chart_matrices_reads_heatmaps_and_facet_layouts_alike():
    from ui.charts.facets import head_maps

    heat = side_by_side(heatmap(M, title="A", row_labels=["a", "b"]), heatmap(M.T, title="B")).to_dict()
    assert [(t, r) for t, _, r, _ in chart_matrices(heat)] == [(t, r) for t, _, r, _ in heatmap_matrices(heat)]
    w = np.full((2, 2, 2), 0.5)
    facets = head_maps(w, ["x", "y"]).to_dict()
    assert matrix_titles(facets) == [t for t, *_ in chart_matrices(facets)]
    title, matrix, rows, cols = chart_matrix(facets, 1)
    assert title == "attention weights · head 2" and rows == cols == ["x", "y"]
    np.testing.assert_array_equal(matrix, w[1])
    # As a page test reads a spec back from the app: the datasets are DataFrames, not records.
    as_frames = {**facets, "datasets": {k: pd.DataFrame(v) for k, v in facets["datasets"].items()}}
    np.testing.assert_array_equal(chart_matrix(as_frames, 1)[1], w[1])
    heat_frames = {**heat, "datasets": {k: pd.DataFrame(v) for k, v in heat["datasets"].items()}}
    np.testing.assert_array_equal(chart_matrix(heat_frames, 1)[1], M.T)


def test_matrix_layout_checks_its_shape():
    layout = matrix_layout((2, 1, 4), ["P", "Q"], [["a"], ["b"]], list("wxyz"), blocks=(2, ["h1", "h2"]))
    assert layout == {"name": "P, Q", "shape": [2, 1, 4], "titles": ["P", "Q"], "rows": [["a"], ["b"]],
                      "cols": ["w", "x", "y", "z"], "blocks": {"columns": 2, "titles": ["h1", "h2"]}}
    with pytest.raises(ValueError, match="1 titles for 2 matrices"):
        matrix_layout((2, 1, 4), ["P"], ["a"], list("wxyz"))
    with pytest.raises(ValueError, match="row labels .* do not fit 2 matrices of 1 rows"):
        matrix_layout((2, 1, 4), ["P", "Q"], ["a", "b"], list("wxyz"))
    with pytest.raises(ValueError, match="column labels"):
        matrix_layout((2, 1, 4), ["P", "Q"], ["a"], [list("wxyz")])
    with pytest.raises(ValueError, match="3 blocks of width 2 do not tile 4 columns"):
        matrix_layout((2, 1, 4), ["P", "Q"], ["a"], list("wxyz"), blocks=(2, ["h1", "h2", "h3"]))


def _menu_app() -> None:
    """Two charts with an export menu each: a pair of heatmaps and one faceted chart of two heads."""
    import numpy as np

    from ui.charts.arrange import side_by_side
    from ui.charts.facets import head_maps
    from ui.charts.heatmap import heatmap
    from ui.display import show_chart

    m = np.array([[0.509, -0.196], [1.25, 0.0]])
    show_chart(side_by_side(heatmap(m, title="raw scores"), heatmap(m.T, title="scaled scores")))
    show_chart(head_maps(np.full((2, 2, 2), 0.5), ["x", "y"]))


def test_a_closed_menu_does_not_list_its_files(monkeypatch):
    """The files are listed (every chart's matrices found) only while the menu is open, not on every step."""
    import ui.display

    listed = []
    real = ui.display.matrix_titles
    monkeypatch.setattr(ui.display, "matrix_titles", lambda spec: listed.append(spec) or real(spec))
    at = AppTest.from_function(_menu_app, default_timeout=60).run()
    assert not at.exception and len(export_menu_keys(at)) == 2 and listed == []
    open_export_menus(at)
    assert len(listed) >= 2


def test_export_menu_is_one_choice_and_one_deferred_download_per_chart():
    at = AppTest.from_function(_menu_app, default_timeout=60).run()
    assert not at.exception
    # Closed, a menu is its popover alone: the browser redraws no widgets of it on a slider step.
    assert len(export_menu_keys(at)) == 2 and not at.selectbox and not at.get("download_button")
    open_export_menus(at)
    menus = [s for s in at.selectbox if s.key.startswith("export_")]
    buttons = at.get("download_button")
    assert len(menus) == len(buttons) == len(at.get("vega_lite_chart")) == 2
    assert menus[0].options == ["Chart · PNG image", "Chart · SVG drawing", "raw scores · CSV",
                                "raw scores · LaTeX bmatrix", "scaled scores · CSV", "scaled scores · LaTeX bmatrix"]
    assert menus[1].options[2:] == ["attention weights · head 1 · CSV", "attention weights · head 1 · LaTeX bmatrix",
                                    "attention weights · head 2 · CSV", "attention weights · head 2 · LaTeX bmatrix"]
    assert [b.label for b in buttons] == ["raw_scores_scaled_scores.png", "attention_weights_every_head.png"]
    assert all(b.proto.deferred_file_id and not b.proto.url for b in buttons)  # nothing made until clicked
    keys = [w.key for w in (*menus, *buttons)]
    assert len(set(keys)) == len(keys)
    at.run()  # keys are stable across reruns
    assert [w.key for w in (*[s for s in at.selectbox if s.key.startswith("export_")], *at.get("download_button"))] \
        == keys
    menus[1].set_value(menus[1].options.index("attention weights · head 2 · LaTeX bmatrix")).run()
    assert at.get("download_button")[1].label == "attention_weights_head_2.tex"
    assert at.get("download_button")[0].label == "raw_scores_scaled_scores.png"  # the other menu is untouched


def test_the_menu_files_are_the_matrices():
    with recorded_downloads() as files:
        at = AppTest.from_function(_menu_app, default_timeout=60).run()
        name, csv = download(at, files, "scaled scores · CSV")
        assert name == "scaled_scores.csv"
        np.testing.assert_array_equal(parse_csv(csv)[0], M.T)
        name, tex = download(at, files, "attention weights · head 2 · LaTeX bmatrix")
        assert name == "attention_weights_head_2.tex" and parse_latex(tex).tolist() == [[0.5, 0.5], [0.5, 0.5]]
        name, svg = download(at, files, "Chart · SVG drawing", chart="raw_scores")
        assert name == "raw_scores_scaled_scores.svg" and "1.250" in svg


def test_the_worked_example_exports_every_matrix():
    """One menu for the landing page's five charts: each as PNG and SVG, its 11 matrices each as CSV and LaTeX."""
    at = run_page("app_pages/worked_example.py")
    assert not at.exception
    assert export_menu_keys(at) == ["export_page_body_open"]  # the page's fragment draws one menu for all its charts
    open_export_menus(at)
    (menu,) = [s for s in at.selectbox if s.key.startswith("export_")]
    assert len(at.get("download_button")) == 1 and len(at.get("vega_lite_chart")) == 5  # W, Q, K, V: one chart
    images = [o.removesuffix(" · PNG image") for o in menu.options if o.endswith(" · PNG image")]
    assert images == ["X", "W_q, W_k, W_v, Q, K, V", "raw scores Q Kᵀ, scaled scores Q Kᵀ / √4",
                      "attention weights A", "output = A V"]
    assert [o.removesuffix(" · SVG drawing") for o in menu.options if o.endswith(" · SVG drawing")] == images
    csv = {o.removesuffix(" · CSV") for o in menu.options if o.endswith(" · CSV")}
    tex = {o.removesuffix(" · LaTeX bmatrix") for o in menu.options if o.endswith(" · LaTeX bmatrix")}
    assert csv == tex and len(csv) >= 11 and {"X", "W_q", "Q", "attention weights A"} <= csv


def _fragment_app() -> None:
    """A page fragment with two exported charts, one not exported, and a nested fragment with a chart of its own."""
    import numpy as np

    from ui.charts.heatmap import heatmap
    from ui.display import show_chart
    from ui.layout import page_fragment

    @page_fragment
    def detail() -> None:
        show_chart(heatmap(np.eye(2), title="close-up"))

    @page_fragment
    def page_body() -> None:
        show_chart(heatmap(np.eye(2), title="first"))
        show_chart(heatmap(np.ones((2, 2)), title="not exported"), export=False)
        detail()
        show_chart(heatmap(np.full((2, 3), 0.5), title="second"))

    page_body()


def test_a_page_fragment_draws_one_menu_for_its_charts_after_them():
    at = AppTest.from_function(_fragment_app, default_timeout=60).run()
    assert not at.exception
    # The nested fragment's menu closes its own body; the page's comes after everything the page drew. Each is
    # followed by its charts' "Show the numbers" (`ui.numbers_tables`).
    assert export_menu_keys(at) == ["export_detail_open", "export_page_body_open"]
    (page,) = at.main.children.values()  # the page's fragment
    assert [getattr(node, "type", "") for node in page.children.values()] == [
        "vega_lite_chart", "vega_lite_chart", "flex_container", "vega_lite_chart", "popover", "expander"]
    (detail,) = [node for node in page.children.values() if node.type == "flex_container"]
    assert [node.type for node in detail.children.values()] == ["vega_lite_chart", "popover", "expander"]
    open_export_menus(at)
    detail, live = (s for s in at.selectbox if s.key.startswith("export_"))
    assert detail.options == ["Chart · PNG image", "Chart · SVG drawing", "close-up · CSV",
                              "close-up · LaTeX bmatrix"]
    assert live.options == ["first · PNG image", "first · SVG drawing", "first · CSV", "first · LaTeX bmatrix",
                            "second · PNG image", "second · SVG drawing", "second · CSV", "second · LaTeX bmatrix"]
    live.set_value(live.options.index("second · SVG drawing")).run()
    assert [b.label for b in at.get("download_button")] == ["close_up.png", "second.svg"]


def test_the_page_menu_downloads_any_of_its_charts():
    with recorded_downloads() as files:
        at = AppTest.from_function(_fragment_app, default_timeout=60).run()
        name, svg = download(at, files, "second · SVG drawing")
        assert name == "second.svg" and "<svg" in svg and "0.50" in svg
        name, csv = download(at, files, "first · CSV")
        assert name == "first.csv"
        np.testing.assert_array_equal(parse_csv(csv)[0], np.eye(2))
