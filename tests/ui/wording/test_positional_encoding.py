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
