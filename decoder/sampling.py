r"""Choosing the next word from the decoder's logits: temperature, top-k, top-p (nucleus), then a seeded draw.

.. math::

    p_\tau = \operatorname{softmax}(z / \tau),\qquad
    K = \text{the } k \text{ most likely words},\qquad
    N = \text{the fewest most likely words of } K \text{ whose mass reaches } p,\qquad
    q(w) = \frac{p_\tau(w)\,[w \in N]}{\sum_{v \in N} p_\tau(v)}

``τ = 0`` is the limit ``τ → 0``: all the mass on the largest logit (greedy decoding). ``k = 0`` and ``p = 1``
keep every word. The word is then drawn from ``q`` with a uniform number made from the seed and the position, so
equal settings always write the same text.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.attention import softmax

#: Two probability masses this close are equal: top-p keeps the words whose mass reaches p "exactly" even when the
#: float64 sums leading to it are a few rounding steps short (a sum of 32 probabilities is off by under 1e-14, far
#: below the 0.05 between two top-p settings).
MASS_TOLERANCE = 1e-12
#: The smallest temperature other than 0 (greedy): z / τ stays finite for every logit up to 1e302 in size (float32's
#: largest is 3.4e38), where a subnormal τ such as 1e-310 would turn it into inf.
MIN_TEMPERATURE = 1e-6


@dataclass(frozen=True)
class Sampling:
    """How the next word is chosen: temperature ``τ >= 0`` (0 = greedy), top-k (0 = off), top-p in (0, 1]."""

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0

    def __post_init__(self) -> None:
        if not (np.isfinite(self.temperature) and (self.temperature == 0 or self.temperature >= MIN_TEMPERATURE)):
            raise ValueError(f"temperature must be 0 (greedy) or at least {MIN_TEMPERATURE:g}, got "
                             f"{self.temperature!r}: dividing the logits by less overflows.")
        if not isinstance(self.top_k, int) or self.top_k < 0:
            raise ValueError(f"top_k must be an integer >= 0 (0 keeps every word), got {self.top_k!r}.")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must lie in (0, 1], got {self.top_p!r}.")


@dataclass(frozen=True)
class NextWord:
    """Every number between the logits and the chosen word, one entry per word of the vocabulary.

    Attributes:
        logits: ``(V,)`` the decoder's scores ``z``.
        scaled: ``(V,)`` ``z / τ`` (at ``τ = 0``: 0 for the largest logit, ``-inf`` elsewhere).
        probs: ``(V,)`` ``softmax(z / τ)``.
        cut_by_k, cut_by_p: ``(V,)`` True for the words top-k, then top-p, removed.
        final: ``(V,)`` the probabilities of the words kept, renormalised; 0 for the others.
        draw: the uniform number in [0, 1) that picked `choice`.
        choice: the token id chosen.
    """

    logits: np.ndarray
    scaled: np.ndarray
    probs: np.ndarray
    cut_by_k: np.ndarray
    cut_by_p: np.ndarray
    final: np.ndarray
    draw: float
    choice: int


def tempered(logits: np.ndarray, temperature: float) -> np.ndarray:
    """``z / τ``; at ``τ = 0`` the limit's shape: 0 for the (first) largest logit, ``-inf`` for every other."""
    if temperature == 0:
        scaled = np.full(logits.shape, -np.inf)
        scaled[np.argmax(logits)] = 0.0
        return scaled
    return logits / temperature


def top_k_cut(scores: np.ndarray, k: int) -> np.ndarray:
    """True for every word outside the `k` with the largest scores (logits or probabilities; ties kept in token
    order, as ``argmax`` keeps them); nothing cut at ``k = 0``."""
    cut = np.zeros(scores.shape, dtype=bool)
    if 0 < k < len(scores):
        cut[np.argsort(-scores, kind="stable")[k:]] = True
    return cut


def top_p_cut(probs: np.ndarray, p: float) -> np.ndarray:
    """True for every word outside the nucleus: the fewest most likely words whose probabilities add up to `p`.

    A mass "reaches" p when it is at least ``p - MASS_TOLERANCE``: at p = 0.5 a top word of probability 0.5 is the
    whole nucleus, and with twenty equal words p = 0.05 keeps one, however the sums round.
    """
    cut = np.zeros(probs.shape, dtype=bool)
    if p >= 1.0:
        return cut
    order = np.argsort(-probs, kind="stable")  # most likely first
    mass_before = np.concatenate(([0.0], np.cumsum(probs[order])[:-1]))  # (V,): mass of the words ranked above each
    cut[order[mass_before >= p - MASS_TOLERANCE]] = True  # a word is kept while the words above it fall short of p
    return cut


def options_around(probs: np.ndarray, word: int, n: int) -> list[int]:
    """`word` and the `n - 1` likeliest other words (token ids): choices to ask about that always hold the word
    drawn, and are exactly the `n` likeliest whenever it is one of them."""
    others = [int(i) for i in np.argsort(-probs, kind="stable") if i != word]
    return [word, *others[: n - 1]]


def draw_for(seed: int, position: int) -> float:
    """The uniform number in [0, 1) that chooses the word at `position` of a text written with `seed`."""
    return float(np.random.default_rng([seed, position]).random())


def next_word(logits: np.ndarray, sampling: Sampling, draw: float) -> NextWord:
    """Temper, cut and renormalise `logits` ``(V,)``, then choose the word whose share of ``[0, 1)`` holds `draw`,
    the shares laid out from the most likely word down."""
    z = np.asarray(logits, dtype=np.float64)
    scaled = tempered(z, sampling.temperature)
    probs = softmax(scaled)  # (V,)
    cut_by_k = top_k_cut(scaled, sampling.top_k)  # ranked by z / τ: probabilities that round equal stay ordered
    kept_k = np.where(cut_by_k, 0.0, probs)
    nucleus_of = kept_k / kept_k.sum() if cut_by_k.any() else probs  # renormalised only when top-k cut a word
    cut_by_p = top_p_cut(nucleus_of, sampling.top_p) & ~cut_by_k
    final = np.where(cut_by_k | cut_by_p, 0.0, probs)
    final = final / final.sum()  # (V,): the words kept, renormalised
    order = np.argsort(-final, kind="stable")
    position = np.searchsorted(np.cumsum(final[order]), draw, side="right")
    choice = int(order[min(position, np.count_nonzero(final) - 1)])
    return NextWord(z, scaled, probs, cut_by_k, cut_by_p, final, draw, choice)
