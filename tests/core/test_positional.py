"""Sinusoidal positional encoding: the lesson's formula, any width, clear errors."""

import numpy as np
import pytest

from core import positional_encoding


def lesson_formula(seq_len, d_model):
    """The lesson's own code, for comparison on even and odd widths."""
    pos = np.arange(seq_len)[:, None]
    i = np.arange(d_model)[None, :]
    angles = pos / np.power(10000, (2 * (i // 2)) / d_model)
    pe = np.zeros((seq_len, d_model))
    pe[:, 0::2] = np.sin(angles[:, 0::2])
    pe[:, 1::2] = np.cos(angles[:, 1::2])
    return pe


@pytest.mark.parametrize("seq_len, d_model", [(5, 8), (1, 1), (7, 5), (50, 64), (512, 512)])
def test_matches_the_lessons_formula(seq_len, d_model):
    pe = positional_encoding(seq_len, d_model)
    assert pe.shape == (seq_len, d_model)
    np.testing.assert_allclose(pe, lesson_formula(seq_len, d_model), atol=1e-12)


def test_sine_cosine_pairs_and_distinct_rows():
    pe = positional_encoding(64, 16)
    np.testing.assert_allclose(pe[:, 0::2] ** 2 + pe[:, 1::2] ** 2, 1.0, atol=1e-12)  # each pair on the unit circle
    assert len({tuple(np.round(r, 9)) for r in pe}) == 64  # every position distinct


@pytest.mark.parametrize("args", [(0, 8), (5, 0), (-1, 4), (3.5, 4), ("5", 8)])
def test_rejects_non_positive_or_non_integer_sizes(args):
    with pytest.raises(ValueError, match="positive integer"):
        positional_encoding(*args)
