"""Validate a student's own tokens and embedding matrix before any maths runs.

Input typed into the app is text; a bad edit must come back as one clear
`ValueError` (which cell, what is wrong), never as a NumPy error or a NaN
that silently spreads through every later matrix.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

#: Limits that keep every matrix readable with its values printed in the cells.
MAX_TOKENS = 8
MAX_DIMS = 8


def _number(entry: object, where: str) -> float:
    if entry is None or (isinstance(entry, str) and not entry.strip()):
        raise ValueError(f"{where} is empty: every cell needs a number.")
    if isinstance(entry, bool):
        raise ValueError(f"{where} is {entry!r}, not a number.")
    try:
        value = float(entry.strip()) if isinstance(entry, str) else float(entry)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{where} is {str(entry)[:20]!r}, not a number.") from None
    if math.isnan(value):
        raise ValueError(f"{where} is empty or NaN: every cell needs a number.")
    if math.isinf(value):
        raise ValueError(f"{where} is infinite: use a finite number.")
    return value


def validate_input(tokens: Sequence[object], rows: Sequence[Sequence[object]]) -> tuple[tuple[str, ...], np.ndarray]:
    """Check tokens and the rows of X together; return ``(tokens, X)`` with X ``(T, d_model)`` float64.

    Raises `ValueError` naming the first problem: no tokens, an empty token,
    too many tokens or dimensions, a ragged row, an empty, non-numeric, NaN or
    infinite cell, or a token count that differs from the number of rows.
    """
    labels = tuple("" if t is None else str(t).strip() for t in tokens)
    if not labels:
        raise ValueError("There are no tokens: add at least one row.")
    if len(labels) > MAX_TOKENS:
        raise ValueError(f"{len(labels)} tokens is more than {MAX_TOKENS}; remove some rows.")
    for i, label in enumerate(labels):
        if not label:
            raise ValueError(f"Token {i + 1} has no label: type a word for it.")
        if len(label.split()) > 1:
            raise ValueError(f"Token {i + 1} ({label!r}) contains a space: one word per token.")
    if len(rows) != len(labels):
        raise ValueError(f"{len(labels)} tokens but X has {len(rows)} rows: they must match, one row per token.")
    width = len(rows[0])
    if not 1 <= width <= MAX_DIMS:
        raise ValueError(f"X has {width} columns; use 1 to {MAX_DIMS} embedding dimensions.")
    X = np.empty((len(rows), width))
    for i, row in enumerate(rows):
        if all(entry is None or (isinstance(entry, str) and not entry.strip()) for entry in row):
            raise ValueError(f"Row {i + 1} of X ({labels[i]!r}) is empty: every cell needs a number.")
        if len(row) != width:
            raise ValueError(f"Row {i + 1} of X has {len(row)} entries but row 1 has {width}: X must be rectangular.")
        for j, entry in enumerate(row):
            X[i, j] = _number(entry, f"X row {i + 1} ({labels[i]!r}), column {j + 1}")
    return labels, X


def parse_matrix(text: str) -> list[list[str]]:
    """Split the URL form of a matrix, ``"1,0;0,1"`` (rows by ';', entries by ','), into cells."""
    if not text or not text.strip():
        raise ValueError("The matrix is empty.")
    if len(text) > 2000:
        raise ValueError(f"The matrix text is {len(text)} characters long; at most 2000 are accepted.")
    return [row.split(",") for row in text.strip().strip(";").split(";")]


def format_matrix(X: np.ndarray) -> str:
    """The URL form of a matrix: shortest round-tripping repr of each entry."""
    return ";".join(",".join(repr(float(x)) if not float(x).is_integer() else str(int(x)) for x in row)
                    for row in np.asarray(X, dtype=np.float64))
