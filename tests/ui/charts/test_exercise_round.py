"""The exercise's class round chart (`ui.charts.exercise_round`)."""

import pytest

from ui.charts.exercise_round import mistakes_chart, mistakes_part

LABELS = ("No scaling: the scores are never divided by √d_k.", "Softmax over the wrong axis: the queries.")


def table(chart) -> list[dict]:
    spec = chart.to_dict()  # validated against Vega-Lite's schema
    return spec["datasets"][spec["data"]["name"]]


def test_the_bars_are_the_counts_in_the_order_given_largest_first():
    chart = mistakes_chart(LABELS, (21, 9), n_bars=2)
    assert [(r["mistake"], r["students"], r["order"]) for r in table(chart)] == [(LABELS[0], 21, 0), (LABELS[1], 9, 1)]
    assert chart.to_dict()["layer"][0]["encoding"]["y"]["sort"] == {"field": "order"}


def test_labels_and_counts_are_data_the_structure_depends_on_their_number_only():
    assert mistakes_part(LABELS, (1, 2), n_bars=2).key == mistakes_part(("a", "b"), (9, 0), n_bars=2).key
    assert mistakes_part(LABELS, (1, 2), n_bars=2).key != mistakes_part(("a",), (9,), n_bars=1).key


def test_one_count_per_label():
    with pytest.raises(ValueError, match="one count per mistake"):
        mistakes_part(LABELS, (1,), n_bars=2)
