"""`ui.charts.inline_data`: a chart's table as inline rows, exactly as Altair's default data transformer makes them."""

from __future__ import annotations

import json

import altair as alt
import numpy as np
import pandas as pd
import pytest
from altair.utils.data import to_values

import ui.display
from tests.helpers.apptest import charts_built_anew
from ui.charts.inline_data import ALTAIR_DATASET_NAMING, ROWS, Rows, dataset_name, inline_rows, use_inline_rows
from ui.charts.spec import ALTAIR_DATASET_NAME as NAME_PATTERN

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
    assert as_json(ours) == as_json(to_values(PLAIN))
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
    assert as_json(inline_rows(data)) == as_json(to_values(data))


def test_a_frame_altair_would_refuse_is_refused_by_altair():
    with pytest.raises(ValueError, match="column name"):
        inline_rows(pd.DataFrame({0: [1.0]}).rename(columns={0: 0.5}))


def test_the_app_uses_it_and_the_chart_spec_names_it():
    use_inline_rows()
    assert alt.data_transformers.active == ROWS
    assert alt.vegalite.v6.api._dataset_name is dataset_name
    spec = alt.Chart(PLAIN).mark_point().encode(x="i:Q", y="value:Q").to_dict()
    (rows,) = spec["datasets"].values()
    assert rows == inline_rows(PLAIN)["values"]


PAGES = ["worked_example", "soft_lookup", "scaled_attention", "multi_head", "permutation", "positional_encoding",
         "masked_attention", "cross_attention", "pretrained", "attention_cost"]


@pytest.mark.parametrize("page", PAGES)
def test_pages_draw_the_same_charts_as_with_altairs_own_transformer(page, monkeypatch):
    ours = charts_built_anew(page)
    monkeypatch.setattr(ui.display, "use_inline_rows", lambda: alt.data_transformers.enable("default"))
    try:
        altairs = charts_built_anew(page)
    finally:
        use_inline_rows()
    assert ours and ours == altairs


def test_equal_rows_get_one_name_and_others_another():
    rows = inline_rows(PLAIN)["values"]
    shared = "the"
    assert dataset_name(rows) == dataset_name(inline_rows(PLAIN.copy())["values"])
    assert NAME_PATTERN.fullmatch(dataset_name(rows))  # the form `stable_spec` renames
    assert dataset_name([{"a": shared}, {"a": shared}]) == dataset_name([{"a": "the"}, {"a": "".join(["th", "e"])}])
    assert len({dataset_name(v) for v in ([{"a": 1}], [{"a": 1.0}], [{"a": True}], [{"a": "1"}], [{"a": 2}])}) == 5
    assert dataset_name([{}]) == ALTAIR_DATASET_NAMING([{}]) == "empty"
    unpicklable = [{"f": lambda: 0}]
    assert dataset_name(unpicklable) == ALTAIR_DATASET_NAMING(unpicklable)


@pytest.mark.parametrize("equal", [True, False])
def test_a_chart_sends_equal_tables_once_as_with_altairs_names(equal, monkeypatch):
    use_inline_rows()
    other = PLAIN.copy() if equal else PLAIN.assign(value=PLAIN["value"] + 1)

    def spec() -> dict:
        return alt.layer(alt.Chart(PLAIN).mark_point().encode(x="i:Q", y="single:Q"),
                         alt.Chart(other).mark_line().encode(x="i:Q", y="single:Q")).to_dict()

    ours = spec()
    monkeypatch.setattr("altair.vegalite.v6.api._dataset_name", ALTAIR_DATASET_NAMING)
    altairs = spec()
    assert len(ours["datasets"]) == len(altairs["datasets"]) == (1 if equal else 2)
    assert list(ours["datasets"].values()) == list(altairs["datasets"].values())


def test_rows_read_like_altairs_rows_and_become_the_same_arrow_table():
    """`Rows` give the rows Altair's own transformer gives, and the Arrow table those rows would give."""
    import pyarrow as pa

    rows = inline_rows(PLAIN)["values"]
    assert isinstance(rows, Rows) and len(rows) == 5
    assert rows == to_values(PLAIN)["values"] and to_values(PLAIN)["values"] == rows  # either side of ==
    assert rows[1]["value"] is None and rows[2]["value"] is None and rows[:1] == [rows[0]] and list(rows)[4] == rows[4]
    table = rows.to_arrow()
    assert table.equals(pa.Table.from_pylist(to_values(PLAIN)["values"]))  # non-finite floats are nulls
    assert Rows({"s": np.array(["a", "b"])}).to_arrow().column("s").type == pa.string()


def test_rows_are_named_by_their_content_and_refuse_ragged_columns():
    a, b = Rows({"v": np.arange(3.0)}), Rows({"v": np.arange(3.0)})
    assert dataset_name(a) == dataset_name(b) != dataset_name(Rows({"v": np.arange(1.0, 4.0)}))
    assert dataset_name(a) != dataset_name(Rows({"w": np.arange(3.0)}))
    assert NAME_PATTERN.fullmatch(dataset_name(a)) and a.digest() in repr(a)  # what Altair hashes to name a view
    with pytest.raises(ValueError, match="one length"):
        Rows({"a": np.arange(2), "b": np.arange(3)})
    assert not a.columns["v"].flags.writeable  # shared by every session that draws the chart
