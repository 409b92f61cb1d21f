"""The worked example's sentences on what each designed query asks for, read from the weights on screen."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.designed_weights import Preset
from core.worked_example import WorkedExample


def _listed(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" and {items[-1]}"


def _a(word: str) -> str:
    return f"an {word}" if word[0] in "aeiou" else f"a {word}"


def how_the_weights_are_made(preset: Preset) -> str:
    """The designed weights' recipe, from the preset's features and what each looks for."""
    if preset.feature == "position":
        first, last = preset.kinds[0], preset.kinds[-1]
        pairs = [(k, w) for k, w in preset.looks_for.items() if w]
        asks = "; ".join(f"{k} for {w}" for k, w in pairs[:2]) + ("; and so on" if len(pairs) > 2 else "")
        silent = _listed([k for k, w in preset.looks_for.items() if w is None])
        return (f"Each embedding says only where its word is ({first} to {last}, one dimension each): the words "
                f"themselves are not in X. W_k gives every word a key saying its position; W_q turns each position "
                f"into a query for another: {asks}; {silent} looks for nothing. A query and a key match only when "
                "the key's position is the one the query wants. W_v is the identity, so a word's output is the "
                "blend of the positions it attended to.")
    asks = "; ".join(f"{_a(kind)} for {_a(wanted)}" for kind, wanted in preset.looks_for.items() if wanted)
    return (f"Each embedding says what kind of word it is ({', '.join(preset.kinds)}: one dimension each). W_k gives "
            f"every word a key saying the same; W_q turns each kind into a query for the kind it looks for: {asks}. A "
            "query and a key match only when the key is of the kind the query wants. W_v is the identity, so a "
            "word's output is the blend of the kinds it attended to.")


def _even_spread(ex: WorkedExample, rows: list[int], who: str, kind: str) -> str:
    """The sentence for the queries `rows` that ask for nothing: how even their weights are."""
    spread = ex.weights[rows]
    low, high = f"{spread.min():.2f}", f"{spread.max():.2f}"
    return (f"{who} ({kind}) look{'s' if len(rows) == 1 else ''} for nothing: a zero query scores every key 0, so "
            "the weights are even, " + (f"each {low}" if low == high else f"from {low} to {high}")
            + f" (1/{ex.weights.shape[1]} = {1 / ex.weights.shape[1]:.2f}).")


def previous_word_claim(ex: WorkedExample, labels: Sequence[str]) -> str:
    """Whether every word after the first puts its largest weight on the word just before it, read from the
    weights: the range of those weights, or the words that do not."""
    rows = range(1, len(labels))
    best = [int(np.argmax(ex.weights[i])) for i in rows]
    misses = [f"“{labels[i]}” (on “{labels[b]}”)" for i, b in zip(rows, best, strict=True) if b != i - 1]
    before = np.array([ex.weights[i, i - 1] for i in rows])
    if misses:
        return (f"Not every word puts its largest weight on the word just before it: {_listed(misses)} "
                "do not.")
    low, high = f"{before.min():.2f}", f"{before.max():.2f}"
    return ("Every word after the first puts its largest weight on the word just before it: "
            + (f"{low} each" if low == high else f"from {low} to {high}")
            + f" (“{labels[1]}” on “{labels[0]}”, … “{labels[-1]}” on “{labels[-2]}”).")


def what_each_query_asks(ex: WorkedExample, preset: Preset, labels: Sequence[str]) -> list[str]:
    """One sentence per kind of query: what it looks for, and where its weight actually went (the largest weight and
    the share on the kind it asks for), or, for a kind that asks for nothing, how even its weights are. A position
    preset says it for every word at once (`previous_word_claim`)."""
    kinds = preset.sentence_kinds
    if preset.feature == "position":
        silent = [i for i, k in enumerate(kinds) if preset.looks_for[k] is None]
        return [previous_word_claim(ex, labels)] + [
            _even_spread(ex, [i], f"“{labels[i]}”", kinds[i]) + " Nothing comes before it." for i in silent]
    lines = []
    for kind in (k for k in preset.looks_for if k in kinds):  # in `looks_for`'s order, the pronoun first
        rows = [i for i, k in enumerate(kinds) if k == kind]
        who = _listed([f"“{labels[i]}”" for i in rows])
        wanted = preset.looks_for[kind]
        if wanted is None:
            lines.append(_even_spread(ex, rows, who, kind))
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
