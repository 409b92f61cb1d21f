"""The exercise's class round chart (`ui.charts.exercise_round`)."""

import pytest

from ui.charts.exercise_round import LABEL_CHARS, LABEL_LINES, mistakes_chart, mistakes_part, wrapped

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


def checker_lines() -> list[str]:
    """Every line the chart may be given: each mistake's and each failed check's."""
    from exercise.mistake_kinds import MISTAKE_LINES, CheckOutcome, outcome_line
    from exercise.verdicts import CHECK_NAMES
    fails = [outcome_line(CheckOutcome("failed", n, None), CHECK_NAMES) for n in range(1, len(CHECK_NAMES) + 1)]
    return [*MISTAKE_LINES.values(), *fails]


@pytest.mark.parametrize("label", checker_lines())
def test_each_checker_line_is_written_whole_in_at_most_two_short_lines(label):
    lines = wrapped(label).split("\n")
    assert len(lines) <= LABEL_LINES and all(len(line) <= LABEL_CHARS for line in lines)
    assert " ".join(lines) == label


def test_a_label_too_long_for_two_lines_ends_in_an_ellipsis_and_its_tooltip_holds_it_whole():
    long = "word " * 30
    assert wrapped(long).endswith("…") and len(wrapped(long).split("\n")) == LABEL_LINES
    assert table(mistakes_chart((long,), (1,), n_bars=1))[0]["mistake"] == long


@pytest.mark.parametrize("presenter", [False, True])
def test_the_chart_fits_the_panel_on_a_phone_with_the_longest_lines_and_the_largest_count(presenter):
    """Drawn by Vega itself, as the presenter's panel draws it (fonts and sizes for a projector) and as drawn
    elsewhere: no column of labels beside the bars, so the whole chart fits the panel on a 390-px phone (324 px
    inside the page's and the panel's padding)."""
    import re

    import vl_convert as vlc

    from ui.charts.spec import for_projector
    labels = sorted(checker_lines(), key=len, reverse=True)[:6]
    spec = mistakes_chart(labels, (300, 120, 9, 5, 2, 1), n_bars=6).to_dict()
    svg = vlc.vegalite_to_svg(for_projector(spec) if presenter else spec)
    width = float(re.search(r'<svg[^>]* width="([\d.]+)"', svg).group(1))
    assert width <= 324
