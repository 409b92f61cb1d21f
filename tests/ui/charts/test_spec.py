"""A slider step changes a chart's data, not its spec, so the browser updates the drawn chart in place.

Streamlit's front end rebuilds a Vega view from scratch (compile, parse, draw: 40-100 ms a chart here)
whenever the spec text differs, and only swaps the data when it does not (`ui.charts` docstring).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.helpers.apptest import chart_specs, run_page
from tests.helpers.registry import declarations
from tests.helpers.specs import colour_domain, exported
from ui.charts.arrange import side_by_side
from ui.charts.heatmap import heatmap
from ui.charts.spec import CANVAS, MIN_FONT_PX, THIS_DATA, font_sizes, readable_text, stable_spec, to_spec, view_title

#: A slider step per page that declares one (``data_step`` of its `PageTests`): the seed for the pages whose charts
#: all depend on it (and nothing drawn changes shape with it).
DATA_STEPS = [(page, *shared.data_step) for page, shared in declarations().items() if shared.data_step]


def test_datasets_are_named_by_position_and_the_placeholder_by_its_view():
    chart = side_by_side(heatmap(np.array([[1.0, -3.0]]), title="A"), heatmap(np.array([[2.0, 0.5]]), title="B"))
    raw = chart.to_dict()
    assert all(name.startswith("data-") for name in raw["datasets"])  # Altair's content hashes
    spec = stable_spec(raw)
    assert list(spec["datasets"]) == ["d0", "d1"]
    assert [view["data"] for view in spec["hconcat"]] == [{"name": "d0"}, {"name": "d1"}]
    domains = [view["layer"][0]["encoding"]["color"]["scale"]["domain"]["expr"] for view in spec["hconcat"]]
    assert domains == ["[data('d0')[0].lo, data('d0')[0].hi]", "[data('d1')[0].lo, data('d1')[0].hi]"]
    assert THIS_DATA not in str(spec)
    assert stable_spec(spec) == spec  # idempotent
    assert [colour_domain(spec, view["layer"][0]["encoding"]["color"]["scale"]) for view in spec["hconcat"]] == [
        [-3.0, 3.0], [-2.0, 2.0]]


def test_other_numbers_give_the_same_spec_and_other_data():
    a, b = (to_spec(heatmap(np.random.default_rng(s).normal(size=(3, 4)), title="X")) for s in (0, 1))
    assert {k: v for k, v in a.items() if k != "datasets"} == {k: v for k, v in b.items() if k != "datasets"}
    assert a["datasets"] != b["datasets"]


def test_own_dataset_names_are_kept_and_a_collision_is_refused():
    spec = {"datasets": {"grid": [{"v": 1}]}, "data": {"name": "grid"}, "mark": "rect"}
    assert stable_spec(spec) == spec
    hashed = exported(heatmap(np.ones((1, 1))))["datasets"]["d0"]
    clash = {"datasets": {"d0": [], "data-" + "0" * 32: hashed}, "data": {"name": "d0"}, "mark": "rect"}
    with pytest.raises(ValueError, match="collide"):
        stable_spec(clash)


def test_the_placeholder_needs_a_named_dataset():
    with pytest.raises(ValueError, match="no named dataset"):
        stable_spec({"datasets": {"data-" + "1" * 32: []}, "mark": "rect",
                     "encoding": {"color": {"scale": {"domain": {"expr": f"data('{THIS_DATA}')"}}}}})


@pytest.mark.parametrize(("page", "key", "values"), DATA_STEPS, ids=[f"{page}-{key}" for page, key, _ in DATA_STEPS])
def test_a_slider_step_changes_the_charts_data_but_no_spec(page, key, values):
    before, after = (chart_specs(run_page(f"app_pages/{page}.py", **{key: v})) for v in values)
    assert len(before) == len(after) > 0
    for (spec0, data0), (spec1, data1) in zip(before, after, strict=True):
        assert spec0 == spec1, f"{page}: a chart's spec depends on {key}, so the browser would rebuild it"
        assert list(data0) == list(data1)
    changed = [any(not d0.equals(d1) for d0, d1 in zip(data0.values(), data1.values(), strict=True))
               for (_, data0), (_, data1) in zip(before, after, strict=True)]
    assert any(changed), f"{page}: no chart's data changed with {key}"


def test_a_title_read_from_the_data_is_drawn():
    import re

    import vl_convert as vlc

    from ui.charts.soft_lookup import lookup_weights_chart

    chart = lookup_weights_chart(["a", "b"], np.array([1.0, 0.0]), np.array([0.6, 0.4]), title="soft at τ = 0.5")
    spec = exported(chart)
    assert spec["title"] == {"text": {"expr": "data('d0')[0].title"}}
    assert "soft at τ = 0.5" in re.findall(r"<text[^>]*>([^<]*)</text>", vlc.vegalite_to_svg(spec))


def test_a_heatmap_can_keep_its_title_in_the_data():
    a, b = (exported(heatmap(np.eye(3) * n, title=f"T = {n}", title_in_data=True)) for n in (2, 3))
    assert a["title"] == {"text": {"expr": "data('d0')[0].title"}}
    assert {k: v for k, v in a.items() if k != "datasets"} == {k: v for k, v in b.items() if k != "datasets"}
    assert view_title(a, a["datasets"]) == "T = 2" and view_title(b, b["datasets"]) == "T = 3"
    assert exported(heatmap(np.eye(2), title="plain"))["title"] == "plain"  # by default the title is in the spec


def test_many_celled_charts_are_drawn_on_a_canvas():
    from ui.charts.facets import facets_side_by_side, head_blocks, head_maps

    maps = head_maps(np.full((2, 3, 3), 1 / 3), ["a", "b", "c"])
    blocks = head_blocks({"Q": np.ones((3, 4))}, 2, row_labels=["a", "b", "c"])
    for chart in (maps, blocks, facets_side_by_side(maps, blocks)):
        assert exported(chart)["usermeta"]["embedOptions"] == CANVAS["embedOptions"] == {"renderer": "canvas"}
    from ui.charts.pretrained import close_up

    assert close_up(np.full((3, 3), 1 / 3), list("abc"), title="x")["usermeta"] == CANVAS


def test_a_spec_on_canvas_keeps_the_rest_of_its_usermeta():
    chart = heatmap(np.eye(2)).properties(usermeta={"matrices": ["layout"]})
    assert to_spec(chart, canvas=True)["usermeta"] == {"matrices": ["layout"], **CANVAS}
    assert to_spec(heatmap(np.eye(2)), canvas=True)["usermeta"] == CANVAS
    assert "usermeta" not in to_spec(heatmap(np.eye(2)))


#: Pages whose every chart is drawn on a canvas (``canvas`` of their `PageTests`): a slider step redraws them faster
#: than as SVG elements (the figures: docs/performance.md).
CANVAS_PAGES = [page for page, shared in declarations().items() if shared.canvas]


@pytest.mark.parametrize("name", CANVAS_PAGES)
def test_the_chart_heavy_pages_draw_every_chart_on_a_canvas(name):
    import json

    from tests.helpers.apptest import run_page

    at = run_page(f"app_pages/{name}.py")
    assert not at.exception
    specs = [json.loads(el.proto.spec) for el in at.get("vega_lite_chart")]
    assert specs and all(s.get("usermeta", {}).get("embedOptions") == CANVAS["embedOptions"] for s in specs)


def test_titles_read_from_the_data_name_the_exported_files():
    from ui.charts.soft_lookup import lookup_weights_chart
    from ui.display import _slug
    from ui.export import heatmap_matrices

    spec = exported(lookup_weights_chart(["a", "b"], np.array([1.0, 0.0]), np.array([0.6, 0.4]), title="at τ = 2"))
    assert view_title(spec, spec["datasets"]) == "at τ = 2"
    assert view_title({"title": "plain"}, {}) == "plain" and view_title({}, {}) is None
    from_data = {"title": {"text": {"expr": "data('d0')[0].title"}}}
    assert view_title(from_data, {"d0": pd.DataFrame({"title": ["in a frame"]})}) == "in a frame"  # page tests
    assert view_title(from_data, {"d0": pd.DataFrame({"title": []})}) is None
    assert view_title(from_data, {}) is None
    m = exported(heatmap(np.eye(2), title="I"))
    assert [t for t, *_ in heatmap_matrices(m)] == ["I"]
    assert _slug("at τ = 2") == "at_2"


def test_readable_text_raises_every_small_font_and_leaves_the_data_alone():
    rows = [{"fontSize": 3}]
    spec = {"layer": [{"mark": {"type": "text", "fontSize": 8}}, {"mark": {"type": "text", "fontSize": 14}}],
            "config": {"axis": {"labelFontSize": 10, "titleFontSize": {"expr": "s"}}}, "datasets": {"d0": rows}}
    out = readable_text(spec)
    assert font_sizes(out) == [MIN_FONT_PX, 14, MIN_FONT_PX]
    assert out["datasets"]["d0"] is rows and rows == [{"fontSize": 3}]
    assert out["config"]["axis"]["titleFontSize"] == {"expr": "s"}
    assert font_sizes(spec) == [8, 14, 10]  # the original is unchanged
