"""`ui.patches.streamlit_vega_json`: a chart structure's JSON written once, the same chart messages as Streamlit's."""

from __future__ import annotations

import json

import pytest
from streamlit.elements import vega_charts

from tests.helpers.apptest import run_page
from ui.patches import install, without_patches
from ui.patches import streamlit_vega_json as vega_json

PAGE = "app_pages/transformer_block.py"
#: Settings of the whole block's page, each drawing structures the one before drew (the same placement).
SETTINGS = ({"seed": "3"}, {"seed": "4"}, {"seed": "4", "d_model": "8", "d_ff": "16"})


def chart_messages(**query: str) -> list[tuple[str, list[str]]]:
    """Each chart's spec text and datasets' names, as the page's run sent them."""
    at = run_page(PAGE, **query)
    assert not at.exception, [e.message for e in at.exception]
    return [(el.proto.spec, [d.name for d in el.proto.datasets]) for el in at.get("vega_lite_chart")]


class CountingJson:
    """The standard library's ``json``, counting the dicts written without options (what the patch remembers)."""

    def __init__(self) -> None:
        self.specs = 0

    def __getattr__(self, name: str):
        return getattr(json, name)

    def dumps(self, obj, **options) -> str:
        self.specs += not options and type(obj) is dict
        return json.dumps(obj, **options)


@pytest.fixture
def written(monkeypatch) -> dict[str, list[str] | CountingJson]:
    """What the patch handed to Streamlit's own code and to ``json`` while the test ran: the spec texts given to
    ``_stabilize_vega_json_spec`` ("stabilized") and the specs written ("json")."""
    install()
    vega_json.forget()
    given: list[str] = []
    own = vega_json.PATCH.original("_stabilize_vega_json_spec")
    monkeypatch.setitem(vega_json.PATCH.originals, "_stabilize_vega_json_spec",
                        lambda text: given.append(text) or own(text))
    counting = CountingJson()
    monkeypatch.setattr(vega_json, "json", counting)
    yield {"stabilized": given, "json": counting}
    vega_json.forget()


def test_the_page_sends_streamlits_own_chart_messages_at_each_setting(written):
    ours = [chart_messages(**q) for q in SETTINGS]
    with without_patches():
        assert vega_charts.json is json
        own = [chart_messages(**q) for q in SETTINGS]
    assert ours == own


def test_a_new_setting_of_a_drawn_structure_is_not_written_again(written):
    chart_messages(**SETTINGS[0])
    stabilized, specs = len(written["stabilized"]), written["json"].specs
    assert stabilized >= 3 and specs >= 3  # the block's two halves and the shuffle, at least
    chart_messages(**SETTINGS[1])  # another seed: new data, the same structures
    assert (len(written["stabilized"]), written["json"].specs) == (stabilized, specs)


def test_a_spec_with_another_value_is_written_anew_and_options_go_to_json():
    install()
    vega_json.forget()
    layer = {"mark": "rect"}
    spec = {"layer": [layer], "width": 180}
    assert vega_charts.json.dumps(spec) == json.dumps(spec)
    assert vega_charts.json.dumps({**spec, "width": 300}) == json.dumps({**spec, "width": 300})
    assert vega_charts.json.dumps(spec, sort_keys=True) == json.dumps(spec, sort_keys=True)
    assert vega_charts.json.dumps([spec]) == json.dumps([spec])
    assert vega_charts.json.loads("[1]") == [1] and vega_charts.json.JSONDecodeError is json.JSONDecodeError
