"""Simulated clicks on a chart drawn with ``on_select="rerun"``, for AppTest page tests.

AppTest has no element class for a selectable Vega-Lite chart, so it never sends the chart's state back.
`click_cell` does what the browser does on a click: it reruns the script with the chart's widget state set
to the JSON the frontend sends, ``{"selection": {<param>: [{"i": .., "j": ..}]}}``.
"""

from __future__ import annotations

import json

from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.testing.v1 import AppTest


def chart_id(at: AppTest, key: str) -> str:
    """Element id of the Vega-Lite chart drawn with widget key `key`."""
    for el in at.get("vega_lite_chart"):
        if el.key == key:
            return el.proto.id
    raise AssertionError(f"no selectable chart with key {key!r} on the page")


def click_point(at: AppTest, key: str, point: dict[str, int], param: str = "cell") -> AppTest:
    """Click the mark whose selection fields are `point` (e.g. ``{"h": 1, "q": 2, "k": 0}``) and rerun."""
    states = at._tree.get_widget_states()
    state = WidgetState(id=chart_id(at, key))
    state.string_value = json.dumps({"selection": {param: [point]}})
    states.widgets.append(state)
    return at._run(states)


def click_cell(at: AppTest, key: str, i: int, j: int, param: str = "cell") -> AppTest:
    """Click cell (i, j) of the chart with widget key `key` (selection parameter `param`) and rerun."""
    return click_point(at, key, {"i": i, "j": j}, param)
