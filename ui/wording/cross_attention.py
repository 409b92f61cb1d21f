"""The cross-attention page's sentence on whether the random map looks like a word alignment."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def looks_aligned(weights: np.ndarray) -> bool:
    """True when the target words' strongest source words run in the source's order (never going back) and are not
    all one word: what a word-by-word translation's alignment looks like, read row by row."""
    strongest = np.argmax(weights, axis=1)  # (T_tgt,): each query's favourite key
    return bool(len(set(strongest.tolist())) > 1 and np.all(np.diff(strongest) >= 0))


def alignment(weights: np.ndarray, tgt_labels: Sequence[str], src_labels: Sequence[str], seed: int) -> str:
    """The strongest link of every target word, and whether together they look like an alignment (a coincidence
    with random weights, said as such)."""
    strongest = np.argmax(weights, axis=1)
    links = ", ".join(f"{tgt_labels[i]} → {src_labels[j]} ({weights[i, j]:.2f})" for i, j in enumerate(strongest))
    if len(tgt_labels) < 2 or len(src_labels) < 2:
        return f"Strongest link: {links}."
    if looks_aligned(weights):
        return (f"Read row by row, this map happens to look like a word alignment: the strongest links run in the "
                f"source's order, {links}. That is a coincidence of seed {seed}'s random weights, not a translation "
                "learned: move the seed and it goes.")
    return (f"Read row by row, the strongest links ({links}) do not run in the source's order: with random weights "
            "the map follows no translation.")


def what_each_row_predicts(decoder_input: Sequence[str], target: Sequence[str]) -> str:
    """The decoder's input (the target shifted right) and, row by row, the target word that row learns to predict."""
    pairs = ", ".join(f"*{read}* → *{word}*" for read, word in zip(decoder_input, target, strict=True))
    return (f"The decoder reads the target shifted right by one, “{' '.join(decoder_input)}”: each of its rows has seen "
            f"the target's words before it and learns to predict the next one ({pairs}). The last target word is "
            "only ever predicted, never read.")
