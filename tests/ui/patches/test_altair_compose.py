"""`ui.patches.altair_compose`: composing charts without Altair's needless deep copies gives the very same specs."""

from __future__ import annotations

import altair as alt
import numpy as np
import pytest
from altair.vegalite.v6 import api

from tests.helpers.fresh_process import fresh_python
from ui.charts.arrange import grid, side_by_side
from ui.charts.facets import facets_side_by_side, head_blocks, head_maps, matrix_panels
from ui.charts.heatmap import heatmap
from ui.charts.masked_attention import mask_chart, masked_heatmap
from ui.display import prepare_altair
from ui.patches import install
from ui.patches.altair_compose import PATCH, nothing_to_lift

#: Altair's own helpers (the patch keeps them once installed).
install()
ALTAIR_HELPERS = {name: PATCH.original(name) for name in PATCH.replacements}

TOKENS = ["the", "cat", "sat"]


def selection(name: str = "pick") -> alt.Parameter:
    return alt.selection_point(name=name, fields=["i", "j"], on="click")


def unit(name: str | None = None, param: bool = False) -> alt.Chart:
    chart = alt.Chart(name=name or alt.Undefined).mark_rect().encode(x="i:O", y="j:O")
    return chart.add_params(selection()) if param else chart


#: Every way the app composes charts, and the cases where Altair's lifting does real work.
BUILDERS = {
    "heatmap": lambda: heatmap(np.eye(3)),
    "heatmap with a click selection": lambda: heatmap(np.eye(3), select="cell"),
    "grid of heatmaps": lambda: grid(*(heatmap(np.eye(3) * k, title=f"m{k}") for k in range(4)), columns=2),
    "row, one selection": lambda: side_by_side(heatmap(np.eye(2)), heatmap(np.ones((2, 2)), select="cell")),
    "row, two selections": lambda: side_by_side(heatmap(np.eye(2), select="a"), heatmap(np.eye(2), select="b")),
    "head maps": lambda: head_maps(np.full((2, 3, 3), 1 / 3), TOKENS, select="cell"),
    "head blocks": lambda: head_blocks({"Q": np.arange(12.0).reshape(3, 4)}, 2, row_labels=TOKENS,
                                       highlight={"Q": (1, 0)}, show_values="highlighted"),
    "facets side by side": lambda: facets_side_by_side(
        matrix_panels([("W", np.eye(2), ["a", "b"], ["a", "b"])]), head_maps(np.full((2, 3, 3), 1 / 3), TOKENS)),
    "mask maps": lambda: side_by_side(mask_chart(np.tril(np.ones((3, 3), bool)), TOKENS, title="mask"),
                                      masked_heatmap(np.where(np.tril(np.ones((3, 3))), 1.0, -np.inf), TOKENS,
                                                     title="scores")),
    "layer sharing one selection": lambda: alt.layer(unit(param=True), unit(param=True)),
    "concat of named layers": lambda: alt.hconcat(alt.layer(unit("a"), unit("b")), alt.layer(unit("c"))),
    "concat of layers with selections": lambda: alt.vconcat(alt.layer(unit(param=True), unit()),
                                                            alt.layer(unit(), unit()).add_params(selection("q"))),
    "composite with an empty parameter list": lambda: alt.LayerChart(layer=[unit(), unit()], params=[]),
}


@pytest.mark.parametrize("build", BUILDERS.values(), ids=BUILDERS.keys())
def test_every_composition_gives_altairs_own_spec(build, monkeypatch):
    ours = build().to_dict()
    for name, helper in ALTAIR_HELPERS.items():
        monkeypatch.setattr(api, name, helper)
    assert ours == build().to_dict()


def test_importing_the_chart_modules_and_the_patches_leaves_altair_as_it_is():
    untouched = fresh_python(
        "import pkgutil, importlib, ui.charts\n"
        "for m in pkgutil.iter_modules(ui.charts.__path__): importlib.import_module(f'ui.charts.{m.name}')\n"
        "import ui.display, ui.patches\n"
        "from altair.vegalite.v6 import api\n"
        "from altair.utils import schemapi\n"
        "print(api._combine_subchart_params.__module__, api._remove_duplicate_params.__module__,"
        " api._dataset_name.__module__, schemapi._todict.__module__, schemapi._deep_copy.__module__,"
        " schemapi.DEBUG_MODE)"
    )
    assert untouched.split() == ["altair.vegalite.v6.api"] * 3 + ["altair.utils.schemapi"] * 2 + ["True"]


def test_the_wrappers_are_installed_and_skip_the_copies():
    assert install()["altair_compose"] == "applied"
    assert set(ALTAIR_HELPERS) == {"_combine_subchart_params", "_remove_duplicate_params", "_prepare_to_lift",
                                   "_viewless_dict"}
    assert all(getattr(api, name) is not helper for name, helper in ALTAIR_HELPERS.items())
    maps = [heatmap(np.eye(2)), heatmap(np.ones((2, 2)))]
    composed = grid(*maps, columns=2)
    assert all(a is b for a, b in zip(composed.concat, maps, strict=True))  # no copies
    with_params = side_by_side(maps[0], heatmap(np.eye(2), select="cell"))
    assert with_params.hconcat[0] is not maps[0]  # lifting to do: Altair's own helper, which copies
    assert [p.name for p in with_params.params] == ["cell"]


def test_parameters_are_compared_without_validating_them(monkeypatch):
    install()
    prepare_altair()  # debug mode off: no schema object is validated as it is made
    checked = []
    monkeypatch.setattr(alt.Parameter, "validate", lambda self, *a, **k: checked.append(self), raising=False)
    monkeypatch.setattr(alt.SelectionParameter, "validate", lambda self, *a, **k: checked.append(self),
                        raising=False)
    monkeypatch.setattr(alt.TopLevelSelectionParameter, "validate", lambda self, *a, **k: checked.append(self),
                        raising=False)
    param = alt.selection_point(name="cell", fields=["i", "j"], on="click", views=["view_1"])
    assert api._viewless_dict(param.param) == {"name": "cell", "select": {"type": "point", "fields": ["i", "j"],
                                                                          "on": "click"}}
    side_by_side(heatmap(np.eye(2), select="a"), heatmap(np.eye(2), select="b"))
    assert checked == []
    for name in ("_prepare_to_lift", "_viewless_dict"):
        monkeypatch.setattr(api, name, ALTAIR_HELPERS[name])
    side_by_side(heatmap(np.eye(2), select="a"), heatmap(np.eye(2), select="b"))
    assert checked  # Altair's own helper validates every parameter it compares


def test_nothing_to_lift():
    plain, picked = unit(), unit(param=True)
    assert nothing_to_lift(alt.Undefined, [plain, plain])
    assert nothing_to_lift([], [plain])
    assert not nothing_to_lift([selection()], [plain])
    assert not nothing_to_lift(alt.Undefined, [plain, picked])
    assert nothing_to_lift(alt.Undefined, [alt.layer(unit("a"))])  # a single sub-chart: nothing to rename
    assert not nothing_to_lift(alt.Undefined, [alt.layer(unit("a")), plain])  # a concat renames named layers
