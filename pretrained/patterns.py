"""Which heads of the real model follow a habit in the student's text: previous token, next token, [CLS], [SEP], …

A habit is a mask over the ``(T, T)`` weights of one head (for example "each token attends to the one
before it"); a head's score is the share of its attention that falls inside the mask, averaged over the
queries the habit applies to. `strongest_heads` ranks every (layer, head) of a `ModelRun` by it.
"""

from __future__ import annotations

import numpy as np

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
