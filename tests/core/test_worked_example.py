"""The worked example reproduces every matrix the lesson prints, to its 3 printed decimals."""

import dataclasses

import numpy as np
import pytest

from core import LESSON_TOKENS, positional_encoding, worked_example
from tests.helpers import lesson_values as lesson


@pytest.mark.parametrize(
    "field, expected",
    [
        ("Q", lesson.Q),
        ("K", lesson.K),
        ("V", lesson.V),
        ("raw_scores", lesson.RAW_SCORES),
        ("scaled_scores", lesson.SCALED_SCORES),
        ("weights", lesson.WEIGHTS),
        ("output", lesson.OUTPUT),
    ],
)
def test_seed_0_matches_the_lesson(field, expected):
    got = getattr(worked_example(0), field)
    np.testing.assert_array_equal(np.round(got, 3), expected)


def test_fields_and_tokens():
    ex = worked_example()
    assert [f.name for f in dataclasses.fields(ex)] == [
        "tokens", "X", "W_q", "W_k", "W_v", "Q", "K", "V", "raw_scores", "scaled_scores", "weights", "output",
    ]
    assert ex.tokens == LESSON_TOKENS == ("the", "cat", "sat")
    np.testing.assert_array_equal(ex.weights.sum(axis=1).round(12), 1.0)
    assert ex.d_k == 4


def test_weights_follow_the_lessons_recipe():
    rng = np.random.default_rng(0)
    for name in ("W_q", "W_k", "W_v"):
        np.testing.assert_array_equal(getattr(worked_example(0), name), np.round(rng.normal(0, 1, (4, 4)), 1))


def test_is_frozen_and_read_only():
    ex = worked_example(0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ex.Q = None
    with pytest.raises(ValueError):
        ex.Q[0, 0] = 1.0


def test_other_seeds_change_weights_but_not_x():
    a, b = worked_example(0), worked_example(1)
    np.testing.assert_array_equal(a.X, b.X)
    assert not np.allclose(a.W_q, b.W_q)
    assert not np.allclose(a.weights, b.weights)
    np.testing.assert_array_equal(worked_example(1).output, b.output)  # deterministic


def test_custom_input_and_errors():
    ex = worked_example(3, X=np.eye(5), tokens=list("abcde"))
    assert ex.weights.shape == (5, 5) and ex.output.shape == (5, 5)
    with pytest.raises(ValueError, match="one label per row"):
        worked_example(0, X=np.eye(3), tokens=("a", "b"))
    with pytest.raises(ValueError, match="NaN or infinite"):
        worked_example(0, X=[[1.0, np.nan], [0.0, 1.0]], tokens=("a", "b"))
    with pytest.raises(ValueError, match=r"\(tokens, d_model\) matrix"):
        worked_example(0, X=np.ones((2, 2, 2)), tokens=("a", "b"))


def test_positional_encoding_matches_the_lesson_table():
    np.testing.assert_array_equal(np.round(positional_encoding(5, 8), 3), lesson.PE_5x8)
