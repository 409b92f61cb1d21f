"""`ui.patches.altair_dataset_name`: a chart's inline datasets named by a hash of their columns or pickle, in
Altair's form, equal tables once."""

from __future__ import annotations

import altair as alt
import numpy as np
import pytest

from tests.ui.charts.test_inline_data import PLAIN
from ui.charts.inline_data import Rows, inline_rows, use_inline_rows
from ui.charts.spec import ALTAIR_DATASET_NAME as NAME_PATTERN
from ui.patches import install, without_patches
from ui.patches.altair_dataset_name import PATCH, dataset_name

install()
#: Altair's own naming (the patch keeps it once installed).
ALTAIR_DATASET_NAMING = PATCH.original("_dataset_name")


def test_installed_by_the_patches():
    assert install()["altair_dataset_name"] == "applied"
    assert alt.vegalite.v6.api._dataset_name is dataset_name


def test_equal_rows_get_one_name_and_others_another():
    rows = inline_rows(PLAIN)["values"].rows()
    shared = "the"
    assert dataset_name(rows) == dataset_name(inline_rows(PLAIN.copy())["values"].rows())
    assert NAME_PATTERN.fullmatch(dataset_name(rows))  # the form `stable_spec` renames
    assert dataset_name([{"a": shared}, {"a": shared}]) == dataset_name([{"a": "the"}, {"a": "".join(["th", "e"])}])
    assert len({dataset_name(v) for v in ([{"a": 1}], [{"a": 1.0}], [{"a": True}], [{"a": "1"}], [{"a": 2}])}) == 5
    assert dataset_name([{}]) == ALTAIR_DATASET_NAMING([{}]) == "empty"
    unpicklable = [{"f": lambda: 0}]
    assert dataset_name(unpicklable) == ALTAIR_DATASET_NAMING(unpicklable)


@pytest.mark.parametrize("equal", [True, False])
def test_a_chart_sends_equal_tables_once_as_with_altairs_names(equal):
    use_inline_rows()
    other = PLAIN.copy() if equal else PLAIN.assign(value=PLAIN["value"] + 1)

    def spec() -> dict:
        return alt.layer(alt.Chart(PLAIN).mark_point().encode(x="i:Q", y="single:Q"),
                         alt.Chart(other).mark_line().encode(x="i:Q", y="single:Q")).to_dict()

    ours = spec()
    with without_patches():
        altairs = spec()
    assert len(ours["datasets"]) == len(altairs["datasets"]) == (1 if equal else 2)
    assert list(ours["datasets"].values()) == list(altairs["datasets"].values())


def test_rows_are_named_by_their_content():
    a, b = Rows({"v": np.arange(3.0)}), Rows({"v": np.arange(3.0)})
    assert dataset_name(a) == dataset_name(b) != dataset_name(Rows({"v": np.arange(1.0, 4.0)}))
    assert dataset_name(a) != dataset_name(Rows({"w": np.arange(3.0)}))
    assert NAME_PATTERN.fullmatch(dataset_name(a))
