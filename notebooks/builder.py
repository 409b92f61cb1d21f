"""What every page's notebook shares: its cells, its header with the settings cell, and code every page uses.

A notebook is built from a view's settings: the page's controls as plain values, written by `notebooks.values`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from notebooks.values import literal, md_code, safe_link, settings_source


class Notebook:
    """A notebook being written: markdown and code cells in order, then `node` (an nbformat v4 notebook)."""

    def __init__(self) -> None:
        self.cells: list[tuple[str, str]] = []  # (kind, source)

    def md(self, text: str) -> Notebook:
        self.cells.append(("markdown", text.strip("\n")))
        return self

    def code(self, source: str) -> Notebook:
        self.cells.append(("code", source.strip("\n")))
        return self

    def node(self) -> Any:
        """The notebook as an ``nbformat.NotebookNode`` of nbformat 4.5 (nbformat is imported here: a page's run
        never needs it).

        Made from the schema's fields directly: nbformat's ``new_*_cell`` validate every cell, and the first
        validation of a process compiles the schema (a quarter of a second). The tests validate every notebook.
        """
        import nbformat

        cells = [{"cell_type": "markdown", "id": f"cell-{n}", "metadata": {}, "source": source} if kind == "markdown"
                 else {"cell_type": "code", "id": f"cell-{n}", "metadata": {}, "execution_count": None, "outputs": [],
                       "source": source}
                 for n, (kind, source) in enumerate(self.cells)]
        return nbformat.from_dict({"nbformat": 4, "nbformat_minor": 5, "cells": cells, "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"}}})


#: What a notebook needs installed, unless its page's module says otherwise (``NEEDS``).
NEEDS = "numpy torch pandas altair"


def header(nb: Notebook, title: str, page: str, settings: Mapping[str, Any], link: str, note: str = "",
           needs: str = NEEDS, chooses: tuple[str, ...] = ()) -> None:
    """The top of every notebook: the page, its settings and the link back, what to install, a note on bad
    input, the settings cell, then the imports.

    The settings named in `chooses` chose the notebook's cells: they are listed, not set in the settings cell
    (changing them there would change nothing)."""
    shown = "\n".join(f"- {md_code(name)} = {md_code(literal(value))}"
                       + (" (it chose this notebook's cells: change it on the page and download again)" if name in chooses else "")
                       for name, value in settings.items())
    back = (f"[Reopen this view in the app]({safe_link(link)})" if link.startswith("http") else
            f"The link's query, after the page's address in the app: {md_code(link or '(the defaults)')}")
    nb.md(f"# {title}\n\nMade by *Attention, interactively* from its page **{page}**, with these settings:\n\n"
          f"{shown}\n\n{back}.\n\nRun all the cells (Jupyter: *Run ▸ Run All Cells*; Colab: *Runtime ▸ Run all*). "
          f"It needs only `pip install {needs}`.")
    if note:
        nb.md(f"> **Note:** {note}")
    nb.code(settings_source({name: value for name, value in settings.items() if name not in chooses}))
    nb.code(IMPORTS)


IMPORTS = """
import json
import zlib

import altair as alt
import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

np.set_printoptions(precision=3, suppress=True)
"""

SOFTMAX = '''
def softmax(x, axis=-1):
    """Row-wise softmax; subtracting the row's maximum keeps exp from overflowing."""
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
'''

HEATMAP = '''
def heatmap(matrix, rows, cols, title, scheme="blues"):
    """One matrix as a heatmap: a cell per entry, its value in the tooltip."""
    m = np.asarray(matrix)
    df = pd.DataFrame([(f"{i}:{r}", f"{j}:{c}", float(m[i, j]))
                       for i, r in enumerate(rows) for j, c in enumerate(cols)], columns=["row", "col", "value"])
    return alt.Chart(df, title=title).mark_rect().encode(
        x=alt.X("col:N", sort=None, title=None), y=alt.Y("row:N", sort=None, title=None),
        color=alt.Color("value:Q", scale=alt.Scale(scheme=scheme)),
        tooltip=["row", "col", alt.Tooltip("value:Q", format=".3f")],
    ).properties(width=min(40 * len(cols), 360), height=min(40 * len(rows), 360))
'''

EMBEDDINGS = '''
def embed_tokens(tokens, d_model, seed):
    """One standard-normal vector per token, from a generator seeded by the seed and the token's text (its CRC-32):
    equal words get equal vectors, wherever they stand."""
    rows = [np.random.default_rng([seed, zlib.crc32(t.encode("utf-8"))]).normal(size=d_model) for t in tokens]
    return np.stack(rows)  # T x (d_model,) -> (T, d_model)

def random_projections(d_model, seed, n=4):
    """n random (d_model, d_model) matrices scaled by 1/sqrt(d_model): W_q, W_k, W_v, W_o in that order."""
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(d_model, d_model)) / np.sqrt(d_model) for _ in range(n)]
'''

MULTI_HEAD = '''
def multi_head_attention(X, W_q, W_k, W_v, W_o, n_heads):
    """Self-attention with n_heads heads of d_k = d_model / n_heads: (output (T, d_model), weights (H, T, T))."""
    T, d_model = X.shape
    d_k = d_model // n_heads
    Q, K, V = ((X @ W).reshape(T, n_heads, d_k).transpose(1, 0, 2) for W in (W_q, W_k, W_v))  # (H, T, d_k) each
    weights = softmax(Q @ K.transpose(0, 2, 1) / np.sqrt(d_k), axis=-1)  # (H, T, d_k) @ (H, d_k, T) -> (H, T, T)
    concat = (weights @ V).transpose(1, 0, 2).reshape(T, d_model)  # (H, T, d_k) -> (T, H, d_k) -> (T, d_model)
    return concat @ W_o, weights  # (T, d_model) @ (d_model, d_model) -> (T, d_model)
'''

POSITIONAL = '''
def positional_encoding(seq_len, d_model):
    """The sinusoidal encoding, (seq_len, d_model): dims 2i and 2i+1 are a sine and a cosine of one frequency."""
    pos = np.arange(seq_len)[:, None]  # (T, 1)
    i = np.arange(d_model)[None, :]  # (1, d_model)
    angle_rates = 1 / np.power(10000, (2 * (i // 2)) / d_model)
    angles = pos * angle_rates  # (T, d_model)
    pe = np.zeros((seq_len, d_model))
    pe[:, 0::2] = np.sin(angles[:, 0::2])  # even dims: sine
    pe[:, 1::2] = np.cos(angles[:, 1::2])  # odd dims: cosine
    return pe
'''
