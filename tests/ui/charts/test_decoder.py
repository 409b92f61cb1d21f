"""The decoder page's charts: the bars in the order of likelihood, every status in its colour, every map a matrix."""

import re

import numpy as np
import vl_convert as vlc

from ui.charts.decoder import STATUS_COLORS, attention_spec, loss_curves_part, next_word_part, word_status
from ui.charts.template import chart_of, part_spec
from ui.export import matrix_titles, series_tables

WORDS = ["and", ".", "chased", "the"]


def bars(probs, status=None):
    probs = np.asarray(probs, dtype=np.float64)
    status = np.array(["kept"] * len(probs), dtype=object) if status is None else status
    return next_word_part(WORDS, np.log(probs + 1e-9), np.log(probs + 1e-9), probs, probs, status)


def test_the_bars_are_drawn_likeliest_first_whatever_the_words_alphabet():
    svg = vlc.vegalite_to_svg(chart_of(bars([0.54, 0.46, 0.0, 0.0])).to_dict())
    labels = [t for t in re.findall(r"<text[^>]*>([^<]+)</text>", svg) if t in WORDS]
    assert labels[:4] == WORDS  # "." would come before "and" in the alphabet


def test_each_words_fate_has_its_own_colour():
    status = word_status(np.array([False, True, False, False]), np.array([False, False, True, False]))
    assert status.tolist() == ["kept", "cut by top-k", "cut by top-p", "kept"]
    spec = part_spec(bars([0.4, 0.3, 0.2, 0.1], status))
    scale = next(layer["encoding"]["color"]["scale"] for layer in spec["layer"] if "color" in layer["encoding"])
    assert scale == {"domain": list(STATUS_COLORS), "range": list(STATUS_COLORS.values())}


def test_the_curves_and_the_bars_are_tables_and_every_map_a_matrix():
    curves = part_spec(loss_curves_part(np.array([0, 10]), np.array([3.0, 1.0]), np.array([5, 10]),
                                        np.array([2.0, 1.1]), 1.3, 0.95))
    assert series_tables({**curves, "datasets": curves["datasets"]})
    maps = np.tile(np.tril(np.ones((3, 3))) / np.arange(1, 4)[:, None], (2, 2, 1, 1))  # (L=2, H=2, 3, 3)
    spec = attention_spec(maps, ["the", "cat", "sat"])
    assert len(matrix_titles(spec)) == 4
