"""The class poll's answers chart (`ui.charts.poll`)."""

import pytest

from ui.charts.poll import BAR_COLOR, RIGHT_COLOR, answers_chart, answers_part
from ui.charts.template import chart_of, part_spec

OPTIONS = ("it grows", "it shrinks", "it stays the same")


def table(chart) -> list[dict]:
    spec = chart.to_dict()  # validated against Vega-Lite's schema
    return spec["datasets"][spec["data"]["name"]]


def test_the_bars_are_the_counts_in_the_questions_order_and_the_spec_is_valid():
    chart = answers_chart(OPTIONS, (3, 0, 5), None, n_options=3)
    rows = table(chart)
    assert [(r["option"], r["votes"], r["order"]) for r in rows] == [("it grows", 3, 0), ("it shrinks", 0, 1),
                                                                     ("it stays the same", 5, 2)]
    assert rows[2]["share"] == pytest.approx(5 / 8)


def test_no_bar_is_marked_before_the_reveal_and_only_the_answer_after():
    before = table(answers_chart(OPTIONS, (3, 1, 5), None, n_options=3))
    after = table(answers_chart(OPTIONS, (3, 1, 5), "it shrinks", n_options=3))
    assert not any(r["right"] for r in before)
    assert [r["option"] for r in after if r["right"]] == ["it shrinks"]
    color = answers_chart(OPTIONS, (3, 1, 5), None, n_options=3).to_dict()["layer"][0]["encoding"]["color"]
    assert color == {"condition": {"test": "datum.right", "value": RIGHT_COLOR}, "value": BAR_COLOR}


def test_nobody_answered_yet_draws_empty_bars_not_an_error():
    rows = table(answers_chart(OPTIONS, (0, 0, 0), None, n_options=3))
    assert all(r["votes"] == 0 and r["share"] == 0 for r in rows)


def test_counts_and_options_are_data_the_structure_depends_on_their_number_only():
    one = answers_part(OPTIONS, (1, 2, 3), None, n_options=3)
    other = answers_part(("a", "b", "c"), (9, 0, 0), "b", n_options=3)
    assert one.key == other.key != answers_part(("a", "b"), (0, 0), None, n_options=2).key
    spec = part_spec(other)
    assert "d0" in spec["datasets"] and chart_of(other).to_dict()


def test_a_count_per_option_is_required():
    with pytest.raises(ValueError, match="one count per option"):
        answers_part(OPTIONS, (1, 2), None, n_options=3)
