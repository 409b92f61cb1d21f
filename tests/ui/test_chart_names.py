"""`ui.chart_names`: a chart's name says what it draws and its shape, and its numbers sentence what a sighted
student reads off it, checked against the lesson's worked example and against NumPy's own arg-max."""

from __future__ import annotations

import numpy as np

from core import worked_example
from ui.chart_names import ChartName, counts_name, heads_name, largest_weight, matrix_name, together, weights_name


def test_the_worked_examples_weights_are_named_by_their_shape_and_their_largest_weight():
    ex = worked_example(0)  # the lesson's three tokens at seed 0
    i, j = np.unravel_index(np.argmax(ex.weights), ex.weights.shape)
    assert weights_name("Attention weights", ex.weights, list(ex.tokens)) == ChartName(
        "Attention weights, 3 queries by 3 keys",
        f"Largest weight {ex.weights[i, j]:.2f}, from '{ex.tokens[i]}' to '{ex.tokens[j]}'.")


def test_a_name_does_not_change_with_the_numbers_only_its_numbers_do():
    """A new name makes Streamlit's front end build a new view: a seed step must keep it."""
    names = [weights_name("Weights", worked_example(seed).weights, ["a", "b", "c"]) for seed in (0, 1, 2)]
    assert len({n.alt for n in names}) == 1 and len({n.numbers for n in names}) == 3


def test_a_cross_attention_map_names_its_queries_and_keys_from_their_own_labels():
    weights = np.array([[0.1, 0.2, 0.7], [0.5, 0.4, 0.1]])  # 2 target words by 3 source words
    assert weights_name("Cross-attention", weights, ["le", "chat"], ["the", "black", "cat"]) == ChartName(
        "Cross-attention, 2 queries by 3 keys", "Largest weight 0.70, from 'le' to 'cat'.")


def test_each_head_is_named_by_its_own_largest_weight():
    weights = np.array([[[0.9, 0.1], [0.3, 0.7]], [[0.4, 0.6], [0.2, 0.8]]])  # (H=2, T=2, T=2)
    assert heads_name("2 maps", weights, ["a", "b"]) == ChartName(
        "2 maps, 2 queries by 2 keys each",
        "Largest weight per head: head 1, 0.90, from 'a' to 'a'; head 2, 0.80, from 'b' to 'b'.")


def test_a_matrix_is_named_by_its_shape_and_its_finite_range():
    scores = np.array([[0.5, -np.inf], [-1.25, 2.0]])  # masked scores: -inf above the diagonal
    assert matrix_name("Masked scores", scores, "queries", "keys") == ChartName(
        "Masked scores, 2 queries by 2 keys", "Values from -1.25 to 2.00.")
    assert matrix_name("Nothing", np.full((1, 2), -np.inf)).numbers == "Values none finite."


def test_charts_drawn_together_keep_each_parts_numbers_under_its_label():
    named = together("Heatmaps", [matrix_name("the raw scores", np.array([[1.0, -2.0]])),
                                  matrix_name("the scaled scores", np.array([[0.5, -1.0]]))], ["Raw", "Scaled"])
    assert named == ChartName("Heatmaps: the raw scores, 1 rows by 2 columns; the scaled scores, 1 rows by 2 columns",
                              "Raw: values from -2.00 to 1.00. Scaled: values from -1.00 to 0.50.")


def test_a_poll_chart_gives_every_options_count():
    assert counts_name("Answers", ["yes", "no"], [3, 0]) == ChartName(
        "Answers, a bar for each of 2 options", "'yes', 3; 'no', 0.")


def test_a_tie_names_the_first_largest_weight_in_reading_order():
    assert largest_weight(np.array([[0.5, 0.5]]), ["q"], ["x", "y"]) == "0.50, from 'q' to 'x'"
