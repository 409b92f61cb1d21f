"""The worked example's sentences on what each designed query asks for, read from the weights on screen."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.designed_weights import KINDS, LOOKS_FOR
from core.worked_example import WorkedExample


def _listed(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" and {items[-1]}"


def _a(word: str) -> str:
    return f"an {word}" if word[0] in "aeiou" else f"a {word}"


def how_the_weights_are_made() -> str:
    """The designed weights' recipe, from `core.designed_weights`' kinds and what each looks for."""
    asks = "; ".join(f"{_a(kind)} for {_a(wanted)}" for kind, wanted in LOOKS_FOR.items() if wanted)
    return (f"Each embedding says what kind of word it is ({', '.join(KINDS)}: one dimension each). W_k gives every "
            f"word a key saying the same; W_q turns each kind into a query for the kind it looks for: {asks}. A query "
            "and a key match only when the key is of the kind the query wants. W_v is the identity, so a word's "
            "output is the blend of the kinds it attended to.")


def what_each_query_asks(ex: WorkedExample, kinds: Sequence[str], labels: Sequence[str]) -> list[str]:
    """One sentence per kind of query: what it looks for, and where its weight actually went (the largest weight and
    the share on the kind it asks for), or, for a kind that asks for nothing, how even its weights are."""
    lines = []
    for kind in (k for k in LOOKS_FOR if k in kinds):  # in `LOOKS_FOR`'s order, the pronoun first
        rows = [i for i, k in enumerate(kinds) if k == kind]
        who = _listed([f"“{labels[i]}”" for i in rows])
        wanted = LOOKS_FOR[kind]
        if wanted is None:
            spread = ex.weights[rows]
            low, high = f"{spread.min():.2f}", f"{spread.max():.2f}"
            lines.append(f"{who} ({kind}) look{'s' if len(rows) == 1 else ''} for nothing: a zero query scores every "
                         "key 0, so the weights are even, "
                         + (f"each {low}" if low == high else f"from {low} to {high}")
                         + f" (1/{ex.weights.shape[1]} = {1 / ex.weights.shape[1]:.2f}).")
            continue
        targets = [j for j, k in enumerate(kinds) if k == wanted]
        for i in rows:
            best = int(np.argmax(ex.weights[i]))
            share = float(ex.weights[i, targets].sum())
            on = _listed([f"“{labels[j]}”" for j in targets])
            lines.append(f"“{labels[i]}” ({kind}) looks for {_a(wanted)}: its largest weight, {ex.weights[i, best]:.2f}, "
                         f"is on “{labels[best]}”, and {share:.2f} of its attention is on the {wanted}"
                         f"{'s' if len(targets) > 1 else ''} {on}.")
    return lines
