"""The multi-head page's sentences about cost and about repeated tokens, from a `core.multihead_steps` result, and
about the real model's heads that specialise, from `pretrained.patterns.found_heads`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.multihead_steps import MultiHeadSteps
from pretrained.patterns import CLEAR, FoundHead, describe


def cost(seq_len: int, d_model: int, n_heads: int) -> str:
    """What H heads cost against one head of the full width: the same projections and score work, H times the maps.

    The scores of head h are a (T, d_k) by (d_k, T) product, T² d_k multiply-adds, and so is its A_h V_h; summed over
    the heads that is T² d_model each, as for one head of width d_model. The maps are H of T × T.
    """
    d_k = d_model // n_heads
    per_head = seq_len**2 * d_k
    return (
        f"What H heads cost: the projections are the same as one full-width head's, and the heads' score work adds "
        f"up to the same: here {n_heads} × {seq_len}² × {d_k} = {n_heads * per_head:,} multiply-adds for QKᵀ "
        f"(and as many for AV), as one head of width {d_model} would do. What grows with H is the number of "
        f"softmaxes and of T × T maps: {n_heads} map{'s' if n_heads > 1 else ''} of {seq_len} × {seq_len}, "
        f"{n_heads * seq_len**2:,} weights to compute and keep, against {seq_len**2:,} for one head."
    )


def equal_rows(steps: MultiHeadSteps, tokens: Sequence[str]) -> str:
    """Whether two equal tokens have equal rows in every head (they do when nothing tells their positions apart)."""
    words = list(tokens)
    repeats = {w: [i for i, x in enumerate(words) if x == w] for w in dict.fromkeys(words) if words.count(w) > 1}
    if not repeats:
        return ("No word appears twice in these tokens; add words (the sentence repeats *the*) to see what equal "
                "tokens do.")
    word, at = next(iter(repeats.items()))
    gap = max(float(np.abs(steps.weights[:, i] - steps.weights[:, at[0]]).max()) for i in at[1:])
    positions = ", ".join(str(i) for i in at[:-1]) + f" and {at[-1]}"
    return (
        f"*{word}* appears at positions {positions}: the same embedding, so the same query, and in every head its "
        f"rows of weights are equal (largest difference {gap:.1e}). Nothing here tells the positions apart: that is "
        "what the next pages, *Order and permutation* and *Positional encoding*, are about."
    )


def trained_heads(found: Sequence[FoundHead]) -> tuple[str, list[str]]:
    """Whether a trained model's heads specialise, said from its measured heads, and one line per head with its
    numbers (`pretrained.patterns.describe`): "specialise" only when one of them follows its habit clearly."""
    if not found:
        return ("A trained model's heads can specialise, but the real model could not be loaded on this server to "
                "measure them.", [])
    lines = [describe(h.habit, h.layer, h.head, h.score, h.baseline) for h in found]
    where = f"Measured in the real model all-MiniLM-L6-v2 on “{found[0].text}”, the head that follows each habit most:"
    if any(h.score >= CLEAR * h.baseline for h in found):
        return f"In a trained model, heads specialise. {where}", lines
    return f"In a trained model heads may specialise, but none of these does so clearly. {where}", lines
