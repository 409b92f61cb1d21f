"""`ui.patches.altair_walks`: exporting and copying charts the short way gives exactly what Altair's own walks give."""

from __future__ import annotations

import collections
import datetime as dt
import enum

import altair as alt
import numpy as np
import pandas as pd
import pytest
from altair.utils import schemapi

from ui.charts.arrange import side_by_side
from ui.charts.heatmap import heatmap
from ui.patches import install
from ui.patches.altair_walks import PATCH, _deep_copy, _todict

#: Altair's own walks (the patch keeps them once installed).
install()
ALTAIR_WALKS = {name: PATCH.original(name) for name in PATCH.replacements}


class Colour(enum.StrEnum):
    RED = "red"


#: Values a chart can hold: the plain ones this module handles, and the others it must leave to Altair.
VALUES = {
    "text, numbers, flags, null": ["a", 1, 2.5, True, False, None, -0.0],
    "nested dicts drop Undefined": {"a": {"b": alt.Undefined, "c": [1, {"d": alt.Undefined, "e": "x"}]}},
    "a tuple becomes a list": (1, (2, "three")),
    "NumPy scalars become Python numbers": [np.float64(0.5), np.int64(3), np.float32(1.25), np.bool_(True)],
    "a NumPy array": np.arange(4.0).reshape(2, 2),
    "dates": [dt.date(2026, 12, 2), dt.datetime(2026, 12, 2, 9, 30), np.datetime64("2026-12-02"),
              pd.Timestamp("2026-12-02 09:30")],
    "a dict subclass": collections.OrderedDict(a=1, b=alt.Undefined),
    "a str enum": [Colour.RED],
    "schema objects inside plain values": {"axis": alt.Axis(title="key", labelAngle=0), "list": [alt.Scale(zero=True)]},
    "a range": range(3),
}


@pytest.mark.parametrize("value", VALUES.values(), ids=VALUES.keys())
def test_export_matches_altairs(value):
    ours = _todict(value, {}, np, pd)
    altairs = ALTAIR_WALKS["_todict"](value, {}, np, pd)
    assert repr(ours) == repr(altairs)
    assert [type(v) for v in _leaves(ours)] == [type(v) for v in _leaves(altairs)]


def _leaves(value):
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def test_a_copy_is_new_all_the_way_down_except_what_is_shared_by_reference():
    data = pd.DataFrame({"i": [0, 1], "j": [0, 1], "value": [0.5, 1.0]})
    chart = alt.Chart(data).mark_rect().encode(x=alt.X("i:O", axis=alt.Axis(title="key")), y="j:O")
    copied = _deep_copy(chart, set())
    assert copied.to_dict() == chart.to_dict()
    assert copied is not chart and copied.encoding is not chart.encoding
    x, copied_x = chart.encoding.x, copied.encoding.x
    assert copied_x is not x and copied_x._kwds["axis"] is not x._kwds["axis"]
    assert copied.data is chart.data  # a DataFrame is not a schema object: shared, as in Altair
    by_ref = _deep_copy(chart, {"encoding"})
    assert by_ref.encoding is chart.encoding


def test_a_copy_matches_altairs_for_a_condition_and_in_debug_mode():
    chart = alt.Chart().mark_rect().encode(color=alt.when(alt.datum.value > 0.5).then(alt.value("red"))
                                           .otherwise(alt.value("blue")))
    assert _deep_copy(chart, set()).to_dict() == ALTAIR_WALKS["_deep_copy"](chart, set()).to_dict()
    with schemapi.debug_mode(True):
        assert _deep_copy(chart, set()).to_dict() == chart.to_dict()


def test_installed_by_the_patches():
    assert install()["altair_walks"] == "applied"
    assert schemapi._todict is _todict and schemapi._deep_copy is _deep_copy
    picked = side_by_side(heatmap(np.eye(2)), heatmap(np.ones((2, 2)), select="cell"))  # lifting copies
    assert [p.name for p in picked.params] == ["cell"]
