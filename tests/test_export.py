"""Exports for slides: PNG and SVG render, CSV and LaTeX round-trip the numbers."""

import io
import re

import numpy as np
import pandas as pd

from ui.charts import heatmap, side_by_side
from ui.export import chart_to_png, chart_to_svg, heatmap_matrices, matrix_to_csv, matrix_to_latex

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
