"""The worked example's claim for the previous-word preset: said only when the weights bear it out."""

from dataclasses import replace

import numpy as np

from core.designed_weights import PREVIOUS_WORD, designed_example
from ui.wording.worked_example import how_the_weights_are_made, previous_word_claim, what_each_query_asks

LABELS = list(PREVIOUS_WORD.sentence)


def test_the_claim_quotes_the_range_of_the_weights_on_the_word_before():
    ex = designed_example(PREVIOUS_WORD)
    before = [ex.weights[i, i - 1] for i in range(1, len(LABELS))]
    claim = previous_word_claim(ex, LABELS)
    assert claim.startswith("Every word after the first puts its largest weight on the word just before it")
    assert f"{min(before):.2f}" in claim


def test_a_word_whose_weight_goes_elsewhere_is_named_and_the_claim_withdrawn():
    ex = designed_example(PREVIOUS_WORD)
    weights = np.array(ex.weights)
    weights[3] = np.eye(len(LABELS))[6]  # "sat" now on "was"
    claim = previous_word_claim(replace(ex, weights=weights), LABELS)
    assert claim.startswith("Not every word") and "“sat” (on “was”)" in claim and "Every word" not in claim


def test_the_recipe_and_the_lines_come_from_the_preset():
    recipe = how_the_weights_are_made(PREVIOUS_WORD)
    assert "position 0 to position 7" in recipe and "position 1 for position 0; position 2 for position 1" in recipe
    assert "position 0 looks for nothing" in recipe
    lines = what_each_query_asks(designed_example(PREVIOUS_WORD), PREVIOUS_WORD, LABELS)
    assert len(lines) == 2 and lines[1].startswith("“the” (position 0) looks for nothing")
