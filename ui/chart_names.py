"""What a screen reader reads of a chart: its name, then the numbers a sighted student looks at first.

A chart's marks are drawn on a canvas, so a screen reader reads its accessible name (``alt``) and nothing else of
it. A `ChartName` has two parts:
- `alt`, the name: what is drawn and its shape ("Attention weights, 6 queries by 6 keys"). It must not change
  when only the numbers do: Streamlit's front end rebuilds a chart whose name changed (a new Vega view) instead of
  swapping its data, which is what keeps a slider step fast (`docs/performance.md`);
- `numbers`, read right after it: the number a student looks for first, such as the largest weight and which
  query gives it to which key, or a matrix's range. `ui.display.show_chart` shows it as a caption under the chart,
  where everyone can read it.
Every number is also in the page's "Show the numbers" tables. Numbers are written with two decimals and an ASCII
minus sign, which screen readers read as "minus".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ChartName:
    """A chart's accessible name (`alt`, fixed for a shape) and the sentence of numbers read after it."""

    alt: str
    numbers: str

    def under(self, label: str) -> str:
        """The numbers after a label: ``Encoder: largest weight 0.62, …``."""
        return f"{label}: {self.numbers[0].lower()}{self.numbers[1:]}"


def _token(label: object) -> str:
    return f"'{label}'"


def largest_weight(weights: np.ndarray, query_labels: Sequence[str], key_labels: Sequence[str]) -> str:
    """``0.62, from 'cat' to 'sat'``: the largest A_ij, query i's weight on key j (the first in reading order)."""
    i, j = np.unravel_index(int(np.argmax(weights)), np.shape(weights))  # (row, column) of max_ij A_ij
    return f"{weights[i, j]:.2f}, from {_token(query_labels[i])} to {_token(key_labels[j])}"


def value_range(matrix: np.ndarray) -> str:
    """``from -0.52 to 1.31``: the smallest and the largest finite entry (a mask's −∞ is left out)."""
    finite = np.asarray(matrix, dtype=float)[np.isfinite(matrix)]
    return f"from {finite.min():.2f} to {finite.max():.2f}" if finite.size else "none finite"


def weights_name(title: str, weights: np.ndarray, query_labels: Sequence[str],
                 key_labels: Sequence[str] | None = None) -> ChartName:
    """``Attention weights, 6 queries by 6 keys`` and ``Largest weight 0.62, from 'cat' to 'sat'.``"""
    key_labels = query_labels if key_labels is None else key_labels
    n_queries, n_keys = np.shape(weights)
    return ChartName(f"{title}, {n_queries} queries by {n_keys} keys",
                     f"Largest weight {largest_weight(weights, query_labels, key_labels)}.")


def heads_name(title: str, weights: np.ndarray, labels: Sequence[str]) -> ChartName:
    """For `weights` of shape (n_heads, T, T): ``…, 5 queries by 5 keys each`` and ``Largest weight per head:
    head 1, 0.62, from 'a' to 'b'; head 2, ….``"""
    _, n_queries, n_keys = np.shape(weights)
    per_head = "; ".join(f"head {h + 1}, {largest_weight(w, labels, labels)}" for h, w in enumerate(weights))
    return ChartName(f"{title}, {n_queries} queries by {n_keys} keys each", f"Largest weight per head: {per_head}.")


def matrix_name(title: str, matrix: np.ndarray, rows: str = "rows", cols: str = "columns") -> ChartName:
    """``The output, 3 tokens by 4 dimensions`` and ``Values from -0.52 to 1.31.``"""
    n_rows, n_cols = np.shape(matrix)
    return ChartName(f"{title}, {n_rows} {rows} by {n_cols} {cols}", f"Values {value_range(matrix)}.")


def together(title: str, parts: Sequence[ChartName], labels: Sequence[str]) -> ChartName:
    """Charts drawn as one: ``Heatmaps of …: the encoder's, 4 queries by 4 keys; the decoder's, …`` and each
    part's numbers after its label, ``Encoder: largest weight 0.62, from 'a' to 'b'. Decoder: ….``"""
    numbers = " ".join(part.under(label) for label, part in zip(labels, parts, strict=True))
    return ChartName(f"{title}: " + "; ".join(part.alt for part in parts), numbers)


def counts_name(title: str, labels: Sequence[str], counts: Sequence[int]) -> ChartName:
    """``The class's answers, a bar for each of 3 options`` and ``'A', 4; 'B', 0; 'C', 2.``"""
    per_bar = "; ".join(f"{_token(label)}, {n}" for label, n in zip(labels, counts, strict=True))
    return ChartName(f"{title}, a bar for each of {len(labels)} options", f"{per_bar}.")
