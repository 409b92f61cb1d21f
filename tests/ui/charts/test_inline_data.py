"""`ui.charts.inline_data`: a chart's table as inline rows, exactly as Altair's default data transformer makes them."""

from __future__ import annotations

import gc
import json

import altair as alt
import numpy as np
import pandas as pd
import pytest

import ui.display
from devtools.appserver import router_pages
from tests.helpers.apptest import charts_built_anew
import ui.charts.inline_data as inline_data
from ui.charts.inline_data import ROWS, Rows, inline_rows, shared_column, use_inline_rows

#: Every kind of column the chart modules build, with the values JSON cannot hold.
PLAIN = pd.DataFrame({
    "value": [0.5, np.nan, np.inf, -np.inf, -0.0],
    "single": np.float32([1.5, 2.0, 3.0, 4.0, 5.0]),
    "i": [0, 1, 2, 3, 4],
    "small": np.int8([1, 2, 3, 4, 5]),
    "flag": [True, False, True, False, True],
    "token": ["the", "cat", "sat", "on", "mat"],
}, index=[10, 11, 12, 13, 14])


def as_json(values: dict) -> str:
    """The data as JSON, `Rows` as the rows they give; fails on a NaN left in, or on a numpy scalar."""
    return json.dumps({k: v.rows() if isinstance(v, Rows) else v for k, v in values.items()}, allow_nan=False)


def test_plain_columns_give_altairs_own_rows_as_python_values():
    ours = inline_rows(PLAIN)
    assert as_json(ours) == as_json(alt.to_values(PLAIN))
    assert ours["values"][1] == {"value": None, "single": 2.0, "i": 1, "small": 2, "flag": False, "token": "cat"}
    assert {type(v) for row in ours["values"] for v in row.values()} == {float, int, bool, str, type(None)}


@pytest.mark.parametrize("data", [
    pd.DataFrame({"c": pd.Categorical(["a", "b", "a"])}),
    pd.DataFrame({"n": pd.array([1, None, 3], dtype="Int64")}),
    pd.DataFrame({"x": pd.array([0.5, None, 2.0], dtype="Float64")}),
    pd.DataFrame({"t": pd.to_datetime(["2026-01-01", "2026-06-01", "2026-12-01"])}),
    pd.DataFrame({"o": ["a", None, 3]}),
    pd.DataFrame({"a": [np.arange(2), np.arange(3), np.arange(1)]}),
    {"values": [{"a": 1}]},
], ids=["categorical", "nullable int", "nullable float", "datetime", "mixed objects", "arrays", "a dict"])
def test_any_other_kind_of_data_goes_to_altair(data):
    assert as_json(inline_rows(data)) == as_json(alt.to_values(data))


def test_a_frame_altair_would_refuse_is_refused_by_altair():
    with pytest.raises(ValueError, match="column name"):
        inline_rows(pd.DataFrame({0: [1.0]}).rename(columns={0: 0.5}))


def test_the_app_uses_it():
    use_inline_rows()
    assert alt.data_transformers.active == ROWS
    spec = alt.Chart(PLAIN).mark_point().encode(x="i:Q", y="value:Q").to_dict()
    (rows,) = spec["datasets"].values()
    assert rows == inline_rows(PLAIN)["values"]


#: Every page of the router (those without charts draw none either way).
PAGES = [page.name for page in router_pages()]


@pytest.mark.parametrize("page", PAGES)
def test_pages_draw_the_same_charts_as_with_altairs_own_transformer(page, monkeypatch):
    ours = charts_built_anew(page)
    monkeypatch.setattr(ui.display, "use_inline_rows", lambda: alt.data_transformers.enable("default"))
    try:
        altairs = charts_built_anew(page)
    finally:
        use_inline_rows()
    assert ours == altairs


def test_rows_read_like_altairs_rows_and_become_the_same_arrow_table():
    """`Rows` give the rows Altair's own transformer gives, and the Arrow table those rows would give."""
    import pyarrow as pa

    rows = inline_rows(PLAIN)["values"]
    assert isinstance(rows, Rows) and len(rows) == 5
    assert rows == alt.to_values(PLAIN)["values"] and alt.to_values(PLAIN)["values"] == rows  # either side of ==
    assert rows[1]["value"] is None and rows[2]["value"] is None and rows[:1] == [rows[0]] and list(rows)[4] == rows[4]
    table = rows.to_arrow()
    assert table.equals(pa.Table.from_pylist(alt.to_values(PLAIN)["values"]))  # non-finite floats are nulls
    assert Rows({"s": np.array(["a", "b"])}).to_arrow().column("s").type == pa.string()


def test_rows_refuse_ragged_columns_and_are_read_only():
    a = Rows({"v": np.arange(3.0)})
    assert a.digest() in repr(a)  # what Altair hashes to name a view, and its own naming a dataset
    assert a.digest() == Rows({"v": np.arange(3.0)}).digest() != Rows({"v": np.arange(1.0, 4.0)}).digest()
    with pytest.raises(ValueError, match="one length"):
        Rows({"a": np.arange(2), "b": np.arange(3)})
    assert not a.columns["v"].flags.writeable  # shared by every session that draws the chart


def test_a_shared_column_is_converted_once_for_every_table_and_forgotten_with_it():
    labels = shared_column(np.array(["the", "cat", "sat"], dtype=object))
    assert not labels.flags.writeable
    made = inline_data._ARROW_OF_SHARED[id(labels)]
    for values in ([1.0, 2.0, 3.0], [4.0, np.nan, 6.0]):
        table = Rows({"token": labels, "value": np.array(values)}).to_arrow()
        sent = table.column("token").chunk(0)
        assert [b.address for b in sent.buffers() if b] == [b.address for b in made.buffers() if b]  # not a copy
        assert table.equals(Rows({"token": labels.copy(), "value": np.array(values)}).to_arrow())
    key = id(labels)
    del labels, made, table, sent
    gc.collect()
    assert key not in inline_data._ARROW_OF_SHARED
