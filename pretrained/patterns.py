"""Which heads of the real model follow a habit in the student's text: previous token, next token, [CLS], [SEP], …

A habit is a mask over the ``(T, T)`` weights of one head (for example "each token attends to the one
before it"); a head's score is the share of its attention that falls inside the mask, averaged over the
queries the habit applies to. `strongest_heads` ranks every (layer, head) of a `ModelRun` by it.
"""

from __future__ import annotations

import numpy as np

from dataclasses import dataclass

from pretrained.model import ModelRun

#: The computed attention patterns `pattern_scores` looks for, in display order.
PATTERNS: tuple[str, ...] = ("previous token", "next token", "itself", "same word", "[CLS]", "[SEP]")

def pattern_masks(tokens: tuple[str, ...] | list[str], word_ids: tuple[int | None, ...] | list[int | None]
                  ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """For each pattern in `PATTERNS`: a ``(T, T)`` mask of the keys it names, and the ``(T,)`` queries it applies to.

    * previous / next token: key ``i - 1`` / ``i + 1``;  itself: key ``i``;
    * same word: the other pieces of the same word (``token ##ization``) and other
      occurrences of the same word elsewhere in the text; only queries that have one count;
    * [CLS] / [SEP]: the first / last position.
    """
    t = len(tokens)
    if len(word_ids) != t:
        raise ValueError(f"{len(word_ids)} word ids for {t} tokens.")
    idx = np.arange(t)
    words: dict[int, str] = {}
    for tok, w in zip(tokens, word_ids, strict=True):
        if w is not None:
            words[w] = words.get(w, "") + (tok[2:] if tok.startswith("##") else tok)
    wid = np.array([-1 if w is None else w for w in word_ids])
    text = np.array([words.get(w, "") if w is not None else "" for w in word_ids], dtype=object)
    is_word = wid >= 0
    same = (is_word[:, None] & is_word[None, :]) & ((wid[:, None] == wid[None, :]) | (text[:, None] == text[None, :]))
    same &= idx[:, None] != idx[None, :]  # (T, T): another position of the same word
    every = np.ones(t, dtype=bool)
    return {
        "previous token": (idx[None, :] == idx[:, None] - 1, idx >= 1),
        "next token": (idx[None, :] == idx[:, None] + 1, idx <= t - 2),
        "itself": (np.eye(t, dtype=bool), every),
        "same word": (same, same.any(axis=1)),
        "[CLS]": (np.broadcast_to(idx == 0, (t, t)), every),
        "[SEP]": (np.broadcast_to(idx == t - 1, (t, t)), every),
    }


def pattern_scores(run: ModelRun) -> dict[str, tuple[np.ndarray, float]]:
    r"""How strongly every head follows each pattern: ``{pattern: (scores (L, H), uniform baseline)}``.

    .. math:: \text{score}_{l,h} = \frac{1}{|I|}\sum_{i \in I} \sum_{j} A^{(l,h)}_{ij}\, M_{ij}

    the attention mass a query puts on the keys the pattern names (mask ``M``), averaged
    over the queries ``I`` it applies to. The baseline is the same number for a head that
    spreads its attention evenly (``1/T`` per key). Patterns no query applies to
    (no repeated or split word, say) are left out.
    """
    out: dict[str, tuple[np.ndarray, float]] = {}
    t = len(run.tokens)
    for name, (mask, queries) in pattern_masks(run.tokens, run.word_ids).items():
        if not queries.any():
            continue
        mass = (run.weights * mask).sum(axis=-1)  # (L, H, T, T) * (T, T) -> sum over keys -> (L, H, T)
        scores = mass[..., queries].mean(axis=-1)  # (L, H, |I|) -> (L, H)
        baseline = float(mask[queries].sum(axis=1).mean() / t)
        out[name] = (scores, baseline)
    return out


def strongest_heads(scores: dict[str, tuple[np.ndarray, float]]) -> list[tuple[str, int, int, float, float]]:
    """``(pattern, layer, head, score, baseline)`` of the head that follows each pattern most (0-based indices)."""
    rows = []
    for name, (s, baseline) in scores.items():
        layer, head = np.unravel_index(int(np.argmax(s)), s.shape)
        rows.append((name, int(layer), int(head), float(s[layer, head]), baseline))
    return rows


@dataclass(frozen=True)
class FoundHead:
    """The head that follows `habit` most in a run's text (0-based `layer` and `head`), with its numbers."""

    habit: str
    layer: int
    head: int
    score: float  #: the attention share where the habit says, averaged over its queries (`pattern_scores`)
    baseline: float  #: the same share for an even spread
    text: str  #: the text the model was run on


def found_heads(run: ModelRun, habits: tuple[str, ...]) -> tuple[FoundHead, ...]:
    """For each of `habits` (names in `PATTERNS`), in that order, the head of `run` that follows it most; a habit no
    query of the text applies to is left out."""
    found = {name: FoundHead(name, layer, head, score, baseline, run.text)
             for name, layer, head, score, baseline in strongest_heads(pattern_scores(run))}
    return tuple(found[name] for name in habits if name in found)


#: Where each pattern's keys are, as the end of "… of a token's attention goes to …".
PATTERN_KEYS: dict[str, str] = {
    "previous token": "the token just before it",
    "next token": "the token just after it",
    "itself": "the token itself",
    "same word": "the other pieces of its word (like `token ##ization`) or repeats of the word",
    "[CLS]": "`[CLS]`, the first position",
    "[SEP]": "`[SEP]`, the last position",
}
#: A head "follows" a pattern when its score is at least this many times an even spread's.
CLEAR = 2.0
#: … and "mostly" when at least this share of a token's attention goes there.
MOSTLY = 0.5


def describe(name: str, layer: int, head: int, score: float, baseline: float) -> str:
    """What the numbers of the strongest head for `name` say (0-based `layer` and `head`), in words and numbers.

    "Mostly" only from half of the attention up, "clearly" only from `CLEAR` times an even spread; below that the
    sentence says no head does it clearly. The interpretations (word order, a head at rest) come only with "mostly".
    """
    where, who = PATTERN_KEYS[name], f"layer {layer + 1}, head {head + 1}"
    even = f"an even spread would give {baseline:.2f}"
    if score < CLEAR * baseline:
        return (f"No head does this clearly in this text: the strongest, {who}, sends on average {score:.2f} of a "
                f"token's attention to {where} ({even}).")
    if score >= MOSTLY:
        meaning = {"previous token": ": a head that keeps track of word order",
                   "[SEP]": ": heads with nothing to do often rest there, so this head is mostly switched off for "
                            "this text"}.get(name, "")
        return (f"In {who}, most of a token's attention goes to {where}: **{score:.2f}** on average ({even})"
                f"{meaning}.")
    return (f"In {who}, a token sends on average **{score:.2f}** of its attention to {where}: "
            f"{score / baseline:.1f} times an even spread ({baseline:.2f}), and the other {1 - score:.2f} elsewhere.")


def layer_shares(run: ModelRun) -> tuple[np.ndarray, np.ndarray]:
    """Per layer, averaged over its heads and its tokens: the attention within one token of the diagonal, and the
    attention on `[CLS]` and `[SEP]` together, each ``(L,)``."""
    t = len(run.tokens)
    idx = np.arange(t)
    local = np.abs(idx[:, None] - idx[None, :]) <= 1  # (T, T): the diagonal and its neighbours
    special = np.zeros((t, t), dtype=bool)
    special[:, [0, t - 1]] = True  # (T, T): the keys [CLS] and [SEP]
    per_layer = run.weights.mean(axis=1)  # (L, H, T, T) -> (L, T, T)
    return (per_layer * local).sum(axis=-1).mean(axis=-1), (per_layer * special).sum(axis=-1).mean(axis=-1)


def layers_trend(run: ModelRun) -> str:
    """How the layers' local and special-token shares change from the first layer to the last, with the numbers."""
    local, special = layer_shares(run)

    def change(values: np.ndarray) -> str:
        verb = "rises" if values[-1] > values[0] else "falls"
        return f"{verb} from {values[0]:.2f} in layer 1 to {values[-1]:.2f} in layer {len(values)}"

    return (f"In this text, the attention within one token of the diagonal (a token, its neighbours) {change(local)}; "
            f"the attention on `[CLS]` and `[SEP]` {change(special)}.")
