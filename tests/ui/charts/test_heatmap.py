"""Chart builders, tested through `to_dict()`: encodings, scales and the data they carry."""

import json

import altair as alt
import numpy as np
import pandas as pd
import pytest

from tests.helpers.apptest import chart_specs, run_page
from tests.helpers.specs import colour_domain, exported
from ui.charts.arrange import grid, side_by_side
from ui.charts.heatmap import MAX_LABELLED_CELLS, heatmap, matrix_columns, matrix_frame, records, unique_labels
from ui.charts.palette import SEQUENTIAL_SCHEME
from ui.charts.positional_encoding import line_chart
from ui.charts.spec import CANVAS, drawn_on_canvas, for_projector, to_spec, tooltip_expr, without_aria
from ui.export import heatmap_matrices


def spec_and_data(chart):
    spec = exported(chart)
    (values,) = spec["datasets"].values()
    return spec, values


def test_matrix_frame_is_row_major_with_labels():
    df = matrix_frame(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), ["a", "b", "c"], ["x", "y"])
    assert list(df["value"]) == [1, 2, 3, 4, 5, 6]
    assert list(df["row"]) == ["a", "a", "b", "b", "c", "c"] and list(df["col"]) == ["x", "y"] * 3
    with pytest.raises(ValueError, match="2-D"):
        matrix_frame(np.ones(3))
    with pytest.raises(ValueError, match="labels"):
        matrix_frame(np.ones((2, 2)), ["a"], ["x", "y"])


def test_records_are_plain_json_with_null_for_non_finite_numbers():
    rows = records({"v": np.array([1.5, -np.inf, np.nan]), "i": np.arange(3), "s": np.array(["a", "b", "c"], object)})
    assert rows == [{"v": 1.5, "i": 0, "s": "a"}, {"v": None, "i": 1, "s": "b"}, {"v": None, "i": 2, "s": "c"}]
    assert json.loads(json.dumps(rows)) == rows  # Python numbers, not NumPy scalars


def test_heatmap_data_is_records_equal_to_what_altair_makes_of_a_frame():
    """The heatmap hands Altair records (faster to build than a DataFrame); the cells must be the same,
    a masked −∞ score included (null: drawn as a missing cell)."""
    m = np.array([[0.5, -np.inf], [1.0, 2.0]])
    chart = heatmap(m, row_labels=["a", "b"], col_labels=["x", "y"], domain=(-2, 2),
                    extra={"note": np.array([["p", "q"], ["r", "s"]])})
    assert isinstance(chart.data, alt.InlineData)
    _, values = spec_and_data(chart)
    frame = matrix_frame(m, ["a", "b"], ["x", "y"]).assign(x0=["p", "q", "r", "s"])
    (from_frame,) = alt.Chart(frame).mark_rect().to_dict()["datasets"].values()
    assert [{k: row[k] for k in from_frame[0]} for row in values] == from_frame


@pytest.mark.parametrize("options", [{}, {"select": "cell", "highlight_rows": [1], "title_in_data": True}])
def test_heatmap_built_in_one_call_is_altairs_chained_form(options):
    """The heatmap is one `alt.LayerChart(...)` call (each chained call deep-copies it): the same chart as
    the chained form, with its axes, tooltips, sizes and title."""
    chart = heatmap(np.arange(6.0).reshape(2, 3), title="M", cell_size=30, **options)
    spec = chart.to_dict()
    assert spec["width"] == spec["height"] == {"step": 30}
    assert (spec["encoding"]["x"]["field"], spec["encoding"]["y"]["field"]) == ("col", "row")
    assert [t["field"] for t in spec["encoding"]["tooltip"]] == ["row", "col", "value"]
    assert spec["resolve"] == {"scale": {"color": "independent"}}
    assert "title" in spec  # "M", or an expression reading it from the data (`title_in_data`)
    chained = (alt.layer(*chart.layer, data=chart.data, title=chart.title, params=chart.params)
               .encode(x=chart.encoding.x, y=chart.encoding.y, tooltip=chart.encoding.tooltip)
               .resolve_scale(color="independent").properties(width=alt.Step(30), height=alt.Step(30)))
    assert spec == chained.to_dict()


def test_repeated_tokens_get_distinct_labels():
    assert unique_labels(["the", "cat", "the"]) == ["the (0)", "cat", "the (2)"]
    assert unique_labels(["a", "b"]) == ["a", "b"]


def test_signed_heatmap_is_diverging_centred_at_zero_with_values_printed():
    m = np.array([[-2.0, 0.5], [1.0, 0.25]])
    spec, data = spec_and_data(heatmap(m, row_labels=["q1", "q2"], col_labels=["k1", "k2"],
                                       x_title="key token", y_title="query token"))
    rect, text = spec["layer"]
    assert rect["mark"]["type"] == "rect" and text["mark"]["type"] == "text"
    scale = rect["encoding"]["color"]["scale"]
    assert scale["domainMid"] == 0 and colour_domain(spec, scale) == [-2.0, 2.0] and scale["scheme"] == "blueorange"
    assert spec["encoding"]["x"]["title"] == "key token" and spec["encoding"]["y"]["title"] == "query token"
    assert spec["encoding"]["x"]["sort"] is None  # matrix order, not alphabetical
    assert text["encoding"]["text"]["format"] == ".3f"
    assert [d["value"] for d in data] == [-2.0, 0.5, 1.0, 0.25]
    assert {t["field"] for t in spec["encoding"]["tooltip"]} == {"row", "col", "value"}


def test_weights_heatmap_is_sequential_on_0_1():
    spec, _ = spec_and_data(heatmap(np.full((2, 2), 0.5), signed=False))
    scale = spec["layer"][0]["encoding"]["color"]["scale"]
    assert scale["scheme"] == SEQUENTIAL_SCHEME and "domainMid" not in scale
    assert colour_domain(spec, scale) == [0.0, 1.0]


def test_large_matrices_drop_cell_text_but_keep_tooltips():
    n = int(np.sqrt(MAX_LABELLED_CELLS)) + 1
    spec, data = spec_and_data(heatmap(np.zeros((n, n))))
    assert len(spec["layer"]) == 1 and len(data) == n * n
    assert "tooltip" in spec["encoding"]


def test_side_by_side_shares_or_separates_the_colour_scale():
    a, b = heatmap(np.eye(2), title="A"), heatmap(-np.eye(2), title="B")
    assert side_by_side(a, b).to_dict()["resolve"]["scale"]["color"] == "independent"
    spec = side_by_side(a, b, shared_color=True).to_dict()
    assert spec["resolve"]["scale"]["color"] == "shared"
    assert [s["title"] for s in spec["hconcat"]] == ["A", "B"]
    assert spec == alt.hconcat(a, b, spacing=28).resolve_scale(color="shared").to_dict()  # Altair's chained form


def test_grid_wraps_charts_into_rows_of_one_chart():
    """`grid` is one chart (one Vega view) whose panels wrap after `columns`; colours independent by default.

    Its many cells are drawn on a canvas, which the browser repaints faster than as many SVG elements.
    """
    panels = [heatmap(k * np.eye(2), title=f"M{k}") for k in range(1, 7)]
    spec = grid(*panels, columns=3).to_dict()
    assert spec["columns"] == 3 and [p["title"] for p in spec["concat"]] == [f"M{k}" for k in range(1, 7)]
    assert spec["usermeta"] == CANVAS
    assert spec["resolve"]["scale"]["color"] == "independent"
    assert grid(*panels[:2], columns=1, shared_color=True).to_dict()["resolve"]["scale"]["color"] == "shared"
    exported = [title for title, *_ in heatmap_matrices(to_spec(grid(*panels, columns=3)))]
    assert exported == [f"M{k}" for k in range(1, 7)]  # every panel still exports as its own matrix
    # Built in one constructor call, it is the same chart as Altair's chained form (which copies every panel twice).
    chained = alt.concat(*panels, columns=3, spacing=28).resolve_scale(color="independent").properties(usermeta=CANVAS)
    assert spec == chained.to_dict()


def test_charts_are_built_without_altair_validating_every_piece():
    """The app's Altair set-up (`ui.display.prepare_altair`, run by the router) turns Altair's construction-time
    validation off; the tests validate whole specs with `to_dict()`, as here."""
    import altair.utils.schemapi as schemapi

    from ui.display import prepare_altair

    prepare_altair()
    assert schemapi.DEBUG_MODE is False
    heatmap(np.eye(2), title="I").to_dict(validate=True)  # a whole spec is still checked against the schema
    with pytest.raises(schemapi.SchemaValidationError, match="invalid value for `type`"):
        alt.Chart(alt.InlineData(values=[{"a": 1}])).mark_rect().encode(x=alt.X(field="a", type="wrong")).to_dict()


def test_line_chart_encodings():
    df = pd.DataFrame({"d_k": [1, 2, 4, 1, 2, 4], "var": [1, 2, 4, 1, 1, 1], "kind": ["raw"] * 3 + ["scaled"] * 3})
    spec = line_chart(df, x="d_k", y="var", color="kind", log_x=True, x_title="d_k", y_title="variance").to_dict()
    enc = spec["encoding"]
    assert enc["x"]["scale"] == {"type": "log", "base": 2} and enc["x"]["title"] == "d_k"
    assert enc["y"]["title"] == "variance" and enc["color"]["field"] == "kind"
    (values,) = spec["datasets"].values()
    assert [v["var"] for v in values] == [1, 2, 4, 1, 1, 1]


def test_for_projector_enlarges_fonts_and_cells_without_touching_data():
    spec = side_by_side(heatmap(np.eye(2), font_size=12, cell_size=40), heatmap(np.eye(3))).to_dict()
    big = for_projector(spec, scale=1.5)
    text_layer = big["hconcat"][0]["layer"][1]
    assert text_layer["mark"]["fontSize"] == 18
    assert big["hconcat"][0]["width"] == {"step": 60}
    assert big["config"]["axis"]["labelFontSize"] >= 16 and big["config"]["title"]["fontSize"] >= 19
    assert big["datasets"] is spec["datasets"]
    assert spec["hconcat"][0]["layer"][1]["mark"]["fontSize"] == 12  # the original is unchanged


def test_extra_tooltips_carry_the_arithmetic():
    m = np.array([[0.5, 0.5]])
    spec, data = spec_and_data(heatmap(m, extra={"raw score": np.array([[1.0, 1.0]]),
                                                 "sum": np.array([["a+b", "c+d"]], dtype=object)}))
    titles = [t["title"] for t in spec["encoding"]["tooltip"]]
    assert titles[-2:] == ["raw score", "sum"]
    assert [d["x1"] for d in data] == ["a+b", "c+d"] and [d["x0"] for d in data] == [1.0, 1.0]
    with pytest.raises(ValueError, match="extra tooltip"):
        heatmap(m, extra={"bad": np.ones(3)})


def test_highlight_fades_the_other_cells_and_select_adds_a_click_selection():
    spec, data = spec_and_data(heatmap(np.zeros((3, 2)), highlight_rows=[1], select="cell"))
    assert [d["alpha"] for d in data] == [0.25, 0.25, 1.0, 1.0, 0.25, 0.25]
    rect = spec["layer"][0]
    assert rect["encoding"]["opacity"] == {"field": "alpha", "scale": None, "type": "quantitative"}
    (param,) = spec["params"]  # Altair lifts layer selections to the top level
    assert param["name"] == "cell" and param["select"]["fields"] == ["i", "j"]


def _vega_descriptions(spec: dict) -> int:
    """How many mark encoders in the compiled Vega spec build an ARIA description per item."""
    import vl_convert as vlc

    return json.dumps(vlc.vegalite_to_vega(spec)).count('"description"')


def test_canvas_charts_are_drawn_without_per_item_aria_descriptions():
    """A canvas has no element per item for an ARIA label: `without_aria` stops Vega building one per cell."""
    spec = exported(grid(heatmap(np.eye(2), title="A"), heatmap(np.ones((2, 2)), title="B"), columns=2))
    assert drawn_on_canvas(spec)
    assert not drawn_on_canvas(exported(heatmap(np.eye(2))))  # a lone heatmap stays SVG, labels and all
    drawn = without_aria(spec)
    assert drawn["config"] == {**spec["config"], "aria": False} and "aria" not in spec["config"]  # a copy
    assert drawn["datasets"] is spec["datasets"]
    assert _vega_descriptions(spec) > 0 and _vega_descriptions(drawn) == 0


@pytest.mark.parametrize(("page", "canvas"), [("app_pages/multi_head.py", True), ("app_pages/soft_lookup.py", False)])
def test_show_chart_turns_aria_off_only_on_a_canvas(page, canvas):
    specs = [spec for spec, _ in chart_specs(run_page(page))]
    assert specs
    for spec in specs:
        assert drawn_on_canvas(spec) == canvas
        assert (spec.get("config", {}).get("aria") is False) == canvas


def test_tooltip_expr_is_the_channels_lines_as_one_object():
    """Same titles, fields and formats as the tooltip channel, without Vega-Lite's per-line guards."""
    import vl_convert as vlc

    lines = [alt.Tooltip(field="row", type="nominal", title="query token"),
             alt.Tooltip(field="value", type="quantitative", title="weight", format=".3f"),
             alt.Tooltip(field="col", type="nominal")]
    expr = tooltip_expr(lines)
    assert expr.to_dict() == {"expr": '{"query token": datum["row"], "weight": format(datum["value"], ".3f"), '
                                      '"col": datum["col"]}'}
    chart = alt.Chart(alt.InlineData(values=[{"row": "a", "col": "b", "value": 0.5}]),
                      mark=alt.MarkDef(type="rect", tooltip=expr),
                      encoding=alt.FacetedEncoding(x=alt.X(field="col", type="nominal")))
    (mark,) = vlc.vegalite_to_vega(exported(chart))["marks"]
    assert mark["encode"]["update"]["tooltip"] == {"signal": expr.to_dict()["expr"]}  # no isValid/isArray guards


def test_maps_of_the_same_labels_share_their_label_and_index_columns():
    first = matrix_columns(np.zeros((3, 2)), ["the", "cat", "the"], ["d0", "d1"])
    second = matrix_columns(np.ones((3, 2)), ["the", "cat", "the"], ["d0", "d1"])
    assert all(first[name] is second[name] for name in ("row", "col", "i", "j"))
    assert first["row"].tolist() == ["the (0)", "the (0)", "cat", "cat", "the (2)", "the (2)"]
    assert first["j"].tolist() == [0, 1] * 3 and second["value"].tolist() == [1.0] * 6
    assert matrix_columns(np.zeros((3, 2)), ["a", "b", "c"], ["d0", "d1"])["row"] is not first["row"]
    with pytest.raises(ValueError):
        first["i"][0] = 5  # shared by every map of these labels: read-only
