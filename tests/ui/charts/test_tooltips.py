"""`ui.charts.tooltips`: the arithmetic shown on hover reproduces the lesson's numbers."""

import numpy as np
import pytest

from core import causal_mask, scaled_dot_product_attention, worked_example
from tests.helpers import lesson_values as lesson
from ui.charts.tooltips import cell_texts, softmax_tooltips, weighted_sum_tooltips

LABELS = ["The", "cat", "sat"]


def shown_weights(lines: dict[str, np.ndarray]) -> np.ndarray:
    """The weight each "A_ij = exp / row sum" line ends with (masked cells: 0)."""
    how = lines["A_ij = exp / row sum"]
    return np.vectorize(lambda s: 0.0 if s.startswith("exactly 0") else float(s.rsplit("= ", 1)[1]))(how)


def test_the_lessons_weights_from_the_tooltips_own_numbers():
    ex = worked_example(0)
    lines = softmax_tooltips(ex.Q, ex.K, row_labels=LABELS, col_labels=LABELS)
    np.testing.assert_array_equal(np.round(lines["raw score q_i · k_j"], 3), lesson.RAW_SCORES)
    np.testing.assert_array_equal(np.round(lines["scaled score q_i · k_j / √4"], 3), lesson.SCALED_SCORES)
    exps, sums = lines["exp(scaled)"].astype(float), lines["row sum of exp"].astype(float)
    np.testing.assert_allclose(exps / sums, ex.weights, rtol=1e-3)
    np.testing.assert_array_equal(np.round(shown_weights(lines), 3), lesson.WEIGHTS)


def test_a_masked_cell_says_why_it_is_zero():
    ex = worked_example(0)
    lines = softmax_tooltips(ex.Q, ex.K, mask=causal_mask(3), row_labels=LABELS, col_labels=LABELS)
    assert lines["mask M_ij"].tolist() == [["0", "−∞", "−∞"], ["0", "0", "−∞"], ["0", "0", "0"]]
    assert lines["A_ij = exp / row sum"][0, 2] == "exactly 0: “sat” comes after “The”, so M = −∞ and e^(−∞) = 0"
    assert lines["exp(scaled + M)"][1, 2] == "0"
    _, weights = scaled_dot_product_attention(ex.Q, ex.K, ex.V, mask=causal_mask(3))
    np.testing.assert_allclose(shown_weights(lines), weights, atol=5e-5)


def test_the_stable_form_stays_finite_and_gives_the_same_weights():
    rng = np.random.default_rng(0)
    Q, K = 10 * rng.normal(size=(4, 1024)), 10 * rng.normal(size=(4, 1024))  # scores in the thousands
    labels = list("abcd")
    plain = softmax_tooltips(Q, K, row_labels=labels, col_labels=labels, scaled=False)
    stable = softmax_tooltips(Q, K, row_labels=labels, col_labels=labels, scaled=False, stable=True)
    assert "scaled score" not in " ".join(plain) and "score q_i · k_j (not scaled)" in plain
    assert not np.isfinite(plain["exp(score)"].astype(float)).all()  # e^(hundreds) overflows
    exps = stable["exp(score − row max)"].astype(float)
    assert np.isfinite(exps).all() and (exps.max(axis=1) == 1.0).all()
    _, weights = scaled_dot_product_attention(Q, K, K, scale=1.0)
    np.testing.assert_allclose(shown_weights(stable), weights, atol=5e-5)


def test_a_mask_of_the_wrong_shape_is_refused():
    with pytest.raises(ValueError, match="mask of shape"):
        softmax_tooltips(np.ones((2, 3)), np.ones((4, 3)), row_labels="ab", col_labels="abcd", mask=causal_mask(2))


def test_an_output_cell_shows_its_weighted_sum():
    ex = worked_example(0)
    (sums,) = weighted_sum_tooltips(ex.weights, ex.V).values()
    assert sums.shape == ex.output.shape
    evaluated = np.vectorize(lambda s: sum(float(a) * float(b) for a, b in (t.split("×") for t in s.split(" + "))))
    np.testing.assert_allclose(evaluated(sums), ex.output, atol=5e-3)
    assert sums[0, 0].count("×") == 3  # one term per key


def test_cell_texts_are_each_cells_own_formatting_over_broadcast_arrays():
    rng = np.random.default_rng(3)
    x, z = rng.normal(size=(3, 5)), rng.normal(size=(3, 5))
    x[0, 0], x[1, 1], z[2, 2] = -0.0, np.nan, np.inf
    mean, gamma = rng.normal(size=3), rng.normal(size=5)
    texts = cell_texts("(%.3f − %.3f) × %.2f = %.3f", x, mean[:, None], gamma, z)
    expected = [[f"({x[i, j]:.3f} − {mean[i]:.3f}) × {gamma[j]:.2f} = {z[i, j]:.3f}" for j in range(5)]
                for i in range(3)]
    assert texts.shape == (3, 5) and texts.dtype == object
    assert texts.tolist() == expected
    assert texts[0, 0].startswith("(-0.000") and "nan" in texts[1, 1] and texts[2, 2].endswith("inf")
    assert cell_texts("%.1f", np.zeros((0, 4))).shape == (0, 4)
