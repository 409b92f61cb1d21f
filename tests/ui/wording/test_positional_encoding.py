"""The positional-encoding page's sentence on its frequencies: true at every d_model the slider allows (1 to 512)."""

import re

import numpy as np
import pytest

from core import positional_encoding
from core.positional_analysis import encoding_table
from ui.wording.positional_encoding import speeds

SPEED = re.compile(r"turn(?:s|ing) ([\d.e-]+) radians? per position")


def numbers(text: str) -> list[float]:
    return [float(x) for x in SPEED.findall(text)]


@pytest.mark.parametrize("positions, widths", [(1, range(1, 513)), (5, range(1, 513)), (40, range(1, 513)),
                                               (512, (1, 2, 3, 8, 512))])
def test_every_width_the_slider_allows_gets_its_own_frequencies_and_speeds(positions, widths):
    for d_model in widths:
        table = encoding_table(positions, d_model)
        text = speeds(table)
        pe = positional_encoding(positions, d_model)
        # The frequencies as the table has them: dims 2i and 2i + 1 share one, 10000^(-2i / d_model).
        rates = 1 / 10000 ** (2 * (np.arange(d_model) // 2) / d_model)
        n_freq = len(np.unique(rates))
        assert f"d_model = {d_model}" in text
        if n_freq == 1:
            assert "a single frequency" in text and "the last" not in text and "each turning" not in text
            assert numbers(text) == [1.0] and "repeating every 2π ≈ 6.28 positions" in text
        else:
            assert f"there are {n_freq} frequencies" in text
            first, last = numbers(text)
            assert first == 1.0 and last == pytest.approx(rates[-1], rel=5e-3)
            assert f"repeats every {2 * np.pi / rates[-1]:,.0f} positions" in text
            assert ("a sine without its cosine" in text) == (d_model % 2 == 1)
        distinct = len(np.unique(np.round(pe, 9) + 0.0, axis=0))
        if positions > 1:
            assert ("each of the" in text) == (distinct == positions)
            assert ("cannot be told apart" in text) == (distinct < positions)


def test_a_width_whose_positions_repeat_says_so():
    """One sine at 1 radian a step over 512 positions: to 9 decimals they stay distinct, so the sentence says so; a
    table with a repeated row (built here by hand) is said to have fewer vectors than positions."""
    from dataclasses import replace

    table = encoding_table(6, 2)
    assert "each of the 6 positions a vector of its own" in speeds(table)
    fewer = replace(table, distinct=5)
    assert "Only 5 of the 6 positions get vectors of their own" in speeds(fewer)


def test_the_columns_and_the_offset_sentences_hold_at_every_width():
    """What the table's columns hold, and whether the dot product depends on the offset alone, checked against the
    table at every width: an odd width's last column is a lone sine, and there the dot product depends on p too."""
    from ui.wording.positional_encoding import columns, offset_only

    for d_model in range(1, 513):
        pe = positional_encoding(6, d_model)
        rates = 1 / 10000 ** (2 * (np.arange(d_model) // 2) / d_model)
        text = columns(d_model)
        np.testing.assert_allclose(pe[:, 0::2], np.sin(np.arange(6)[:, None] * rates[0::2]))  # even: sines
        slower = bool(np.all(np.diff(np.unique(rates)) != 0)) and len(np.unique(rates)) > 1
        assert ("get slower" in text) == slower
        assert ("without its cosine" in text) == (d_model % 2 == 1 and d_model > 1)
        # the dot product of positions p and p + k against the same offset from 0: equal only at an even width
        gap = np.abs(pe[1:] @ pe[1:].T - np.array([[pe[0] @ pe[abs(q - p)] for q in range(5)] for p in range(5)]))
        depends_on_p = gap.max() > 1e-12
        sentence = offset_only(d_model)
        assert ("depends on where" in sentence) == depends_on_p, d_model
        assert ("only depends on the offset k between the positions, not on where they are" in sentence) == (
            not depends_on_p)


@pytest.mark.parametrize("d_model, one_pair", [(2, True), (3, True), (4, False), (8, False)])
def test_the_trend_speaks_of_pairs_only_where_there_are_several(d_model, one_pair):
    from ui.wording.positional_encoding import similarity_trend

    text = similarity_trend(encoding_table(60, d_model))
    assert "does not fall steadily" in text
    assert ("its one sine/cosine pair" in text) == one_pair and ("the fast pairs" in text) == (not one_pair)
