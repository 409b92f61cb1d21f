"""What every page's notebook shares: its cells, its header with the settings cell, and code every page uses.

A notebook is built from a view's settings: the page's controls as plain values, written by `notebooks.values`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import nbformat
from nbformat import v4

from notebooks.values import md_code, literal, safe_link, settings_source


class Notebook:
    """A notebook being written: markdown and code cells in order, then `node` (an nbformat v4 notebook)."""

    def __init__(self) -> None:
        self.cells: list[Any] = []

    def md(self, text: str) -> Notebook:
        self.cells.append(v4.new_markdown_cell(text.strip("\n")))
        return self

    def code(self, source: str) -> Notebook:
        self.cells.append(v4.new_code_cell(source.strip("\n")))
        return self

    def node(self) -> nbformat.NotebookNode:
        return v4.new_notebook(cells=self.cells, metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"}})


def header(nb: Notebook, title: str, page: str, settings: Mapping[str, Any], link: str, note: str = "") -> None:
    """The top of every notebook: the page, its settings and the link back, a note on bad input, the settings
    cell, then the imports."""
    shown = "\n".join(f"- {md_code(name)} = {md_code(literal(value))}" for name, value in settings.items())
    back = (f"[Reopen this view in the app]({safe_link(link)})" if link.startswith("http") else
            f"The link's query, after the page's address in the app: {md_code(link or '(the defaults)')}")
    nb.md(f"# {title}\n\nMade by *Attention, interactively* from its page **{page}**, with these settings:\n\n"
          f"{shown}\n\n{back}.\n\nRun all the cells (Jupyter: *Run ▸ Run All Cells*; Colab: *Runtime ▸ Run all*). "
          "It needs only `pip install numpy torch pandas altair`.")
    if note:
        nb.md(f"> **Note:** {note}")
    nb.code(settings_source(settings))
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
        color=alt.Color("value:Q", scale=alt.Scale(scheme=scheme)), tooltip=["row", "col", alt.Tooltip("value:Q", format=".3f")],
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
