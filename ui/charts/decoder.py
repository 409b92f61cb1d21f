"""Chart builders for the decoder page: the training curves, the next word's probabilities, and the attention of
the text written so far.

Pure functions (no Streamlit). The next word's chart lists words by rank, so a new setting changes its data,
not its structure.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np

from ui.charts.inline_data import Rows
from ui.charts.palette import CATEGORY, REFERENCE_GREY
from ui.charts.spec import to_spec
from ui.charts.template import DataSource, Part
from ui.charts.training import attention_grid, map_cell_size

#: How a word of the next step's distribution fared: kept, or cut by top-k or top-p. Colours from the palette.
STATUS_COLORS: dict[str, str] = {"kept": CATEGORY[0], "cut by top-k": CATEGORY[5], "cut by top-p": CATEGORY[1]}
#: Words shown in the next word's chart, the most likely first.
TOP_WORDS = 10


def word_status(cut_by_k: np.ndarray, cut_by_p: np.ndarray) -> np.ndarray:
    """Each word's entry of `STATUS_COLORS`."""
    return np.where(cut_by_k, "cut by top-k", np.where(cut_by_p, "cut by top-p", "kept")).astype(object)


def next_word_part(words: Sequence[str], logits: np.ndarray, scaled: np.ndarray, probs: np.ndarray,
                   final: np.ndarray, status: np.ndarray, *, width: int = 360) -> Part:
    """Horizontal bars: the probability after the temperature of each of the most likely words, coloured by what
    top-k and top-p did to it, with the probability it is drawn with printed beside it.

    Every argument but `width` is one entry per word, the most likely first; the tooltip gives the arithmetic
    (logit, logit / τ, softmax, kept and renormalised).
    """
    n = len(words)
    table = Rows({
        "rank": np.arange(1, n + 1), "word": list(words), "logit": np.asarray(logits, dtype=np.float64),
        "scaled": np.where(np.isfinite(scaled), scaled, np.nan), "p": np.asarray(probs, dtype=np.float64),
        "final": np.asarray(final, dtype=np.float64), "status": list(status),
    })
    statuses = list(STATUS_COLORS)

    def make(data: DataSource) -> alt.LayerChart:
        # The two layers' domains are unioned, and Vega-Lite sorts a union by a field only with op min, max or count.
        y = alt.Y(field="word", type="nominal", sort=alt.EncodingSortField(field="rank", op="min", order="ascending"),
                  title=None, axis=alt.Axis(labelFontSize=12))
        x = alt.X(field="p", type="quantitative", title="probability after the temperature",
                  scale=alt.Scale(domain=[0, 1.15]))
        tooltip = [alt.Tooltip(field="word", type="nominal", title="word"),
                   alt.Tooltip(field="logit", type="quantitative", title="logit z", format=".3f"),
                   alt.Tooltip(field="scaled", type="quantitative", title="z / τ", format=".3f"),
                   alt.Tooltip(field="p", type="quantitative", title="softmax(z / τ)", format=".4f"),
                   alt.Tooltip(field="status", type="nominal", title="top-k, top-p"),
                   alt.Tooltip(field="final", type="quantitative", title="drawn with", format=".4f")]
        bars = alt.Chart().mark_bar().encode(
            color=alt.Color(field="status", type="nominal", title=None, sort=statuses,
                            scale=alt.Scale(domain=statuses, range=[STATUS_COLORS[s] for s in statuses]),
                            legend=alt.Legend(orient="bottom", direction="horizontal")))
        text = alt.Chart().mark_text(align="left", dx=4, fontSize=11).encode(
            text=alt.Text(field="final", type="quantitative", format=".2f"))
        return (alt.layer(bars, text, data=data()).encode(x=x, y=y, tooltip=tooltip)
                .properties(width=width, height=22 * n))

    return Part(("next_word", n, width), make, (table,))


def loss_curves_part(steps: np.ndarray, held_out: np.ndarray, train_steps: np.ndarray, train: np.ndarray,
                     bigram: float, grammar: float, *, width: int = 420, height: int = 220) -> Part:
    """The held-out and training loss against the step, over dashed rules at the bigram's and the grammar's loss."""
    curves = Rows({
        "step": np.concatenate([train_steps, steps]).astype(np.int64),
        "curve": ["training batches"] * len(train_steps) + ["held-out sentences"] * len(steps),
        "loss": np.concatenate([train, held_out]).astype(np.float64),
    })
    levels = Rows({"loss": np.array([bigram, grammar]),
                   "reference": ["best bigram model", "the grammar itself (the floor)"]})
    names = ["training batches", "held-out sentences"]

    def make(data: DataSource) -> alt.LayerChart:
        x = alt.X(field="step", type="quantitative", title="training step")
        y = alt.Y(field="loss", type="quantitative", title="next-word cross-entropy")
        lines = alt.Chart(data()).mark_line(strokeWidth=2).encode(
            x=x, y=y, color=alt.Color(field="curve", type="nominal", title=None, sort=names,
                                      scale=alt.Scale(domain=names, range=list(CATEGORY[:2])),
                                      legend=alt.Legend(orient="bottom", direction="vertical")),
            tooltip=[alt.Tooltip(field="curve", type="nominal", title="curve"),
                     alt.Tooltip(field="step", type="quantitative", title="step"),
                     alt.Tooltip(field="loss", type="quantitative", title="loss", format=".3f")])
        rules = alt.Chart(data()).mark_rule(strokeDash=[4, 4], color=REFERENCE_GREY).encode(
            y=alt.Y(field="loss", type="quantitative"),
            tooltip=[alt.Tooltip(field="reference", type="nominal", title="reference"),
                     alt.Tooltip(field="loss", type="quantitative", title="loss", format=".3f")])
        return alt.layer(lines, rules).properties(width=width, height=height)

    return Part(("loss_curves", width, height), make, (curves, levels))


def attention_spec(maps: np.ndarray, words: Sequence[str]) -> dict:
    """Every layer's and head's map ``(n_layers, H, T, T)`` of the text, one panel each, a row of heads per layer,
    every panel a matrix of "Show the numbers" (the training page's grid, rows labelled ``position:word``)."""
    return to_spec(attention_grid(maps, list(words), cell_size=map_cell_size(len(words)), per_row=maps.shape[1]))
