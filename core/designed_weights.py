r"""Designed weights for the worked example: W_q and W_k made by hand so that every query asks for something a
student can name ("a pronoun looks for the noun", "each word looks for the word before it").

A preset (`Preset`) gives every token's embedding one dimension per feature it can have (`Preset.kinds`: a kind of
word, or a position), 1 in its own. W_k hands every token a key that says the same; W_q turns each feature into a
query for the feature it looks for (`Preset.looks_for`). A query and a key then match, with score :math:`s^2`,
exactly when the key has the feature the query looks for, and score 0 otherwise:

.. math:: (x_i W_q) \cdot (x_j W_k) = s^2\,[\,\text{kind}_j = \text{looks\_for}(\text{kind}_i)\,]

W_v is the identity, so a token's output is the blend of the features it attended to: after attention the pronoun
carries the noun's embedding. A feature that looks for nothing has a zero query and spreads its attention evenly.

`PRESETS` holds every preset by its value of the link's ``weights``: `PRONOUN` ("designed", kinds of word) and
`PREVIOUS_WORD` ("previous word", positions). The module-level `KINDS`, `LOOKS_FOR`, `SENTENCE`, `SENTENCE_KINDS` and
`STRENGTH` are `PRONOUN`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from core.worked_example import WorkedExample, example_from_weights


@dataclass(frozen=True, eq=False)
class Preset:
    """One set of designed weights and the sentence it runs on."""

    name: str  #: its value of the link's ``weights``
    feature: str  #: what an embedding dimension stands for: "kind" (of word) or "position"
    kinds: tuple[str, ...]  #: the features, one embedding dimension each, in this order
    looks_for: Mapping[str, str | None]  #: what a query of each feature asks for (None: nothing, an even spread)
    sentence: tuple[str, ...]
    sentence_kinds: tuple[str, ...]  #: the feature of each word of `sentence`
    strength: float = 3.0  #: s, the size of every nonzero entry of W_q and W_k

    def __post_init__(self) -> None:
        if len(self.sentence) != len(self.sentence_kinds) or not set(self.sentence_kinds) <= set(self.kinds):
            raise ValueError(f"preset {self.name!r}: every word of the sentence needs one of its kinds")
        if set(self.looks_for) != set(self.kinds) or not {w for w in self.looks_for.values() if w} <= set(self.kinds):
            raise ValueError(f"preset {self.name!r}: looks_for must map each kind to a kind or None")


_WORDS = ("the", "small", "cat", "sat", "because", "it", "was", "tired")
_POSITIONS = tuple(f"position {p}" for p in range(len(_WORDS)))

#: "A pronoun looks for the noun": one dimension per kind of word; a match scores s² / √d_k = 9 / 2 against 0.
PRONOUN = Preset(
    name="designed", feature="kind", kinds=("noun", "pronoun", "adjective", "other"),
    # the pronoun first: the example's headline
    looks_for=MappingProxyType({"pronoun": "noun", "noun": "adjective", "adjective": "noun", "other": None}),
    sentence=_WORDS, sentence_kinds=("other", "adjective", "noun", "other", "other", "pronoun", "other", "adjective"),
)
#: "Each word looks for the word just before it": one dimension per position, the words themselves not in X.
PREVIOUS_WORD = Preset(
    name="previous word", feature="position", kinds=_POSITIONS,
    looks_for=MappingProxyType({p: (_POSITIONS[i - 1] if i else None) for i, p in enumerate(_POSITIONS)}),
    sentence=_WORDS, sentence_kinds=_POSITIONS,
)
#: Every preset by its value of the link's ``weights``.
PRESETS: dict[str, Preset] = {p.name: p for p in (PRONOUN, PREVIOUS_WORD)}

#: `PRONOUN`'s kinds of word, what each looks for, its sentence and the kind of each word, and s.
KINDS, LOOKS_FOR, SENTENCE = PRONOUN.kinds, PRONOUN.looks_for, PRONOUN.sentence
SENTENCE_KINDS, STRENGTH = PRONOUN.sentence_kinds, PRONOUN.strength


def kind_embeddings(kinds: tuple[str, ...], preset: Preset = PRONOUN) -> np.ndarray:
    """X ``(T, len(preset.kinds))``: one row per word, 1 in its kind's dimension."""
    X = np.zeros((len(kinds), len(preset.kinds)))
    X[np.arange(len(kinds)), [preset.kinds.index(k) for k in kinds]] = 1.0
    return X


def designed_weights(preset: Preset = PRONOUN) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """W_q, W_k, W_v ``(d, d)`` with ``d = len(preset.kinds)``: the query asks for `looks_for`, the key says its
    kind, the value copies."""
    d = len(preset.kinds)
    W_q = np.zeros((d, d))
    for kind, wanted in preset.looks_for.items():
        if wanted is not None:
            # kind's row -> a query in the wanted kind's column
            W_q[preset.kinds.index(kind), preset.kinds.index(wanted)] = preset.strength
    W_k = preset.strength * np.eye(d)  # a key in its own kind's column
    return W_q, W_k, np.eye(d)


def designed_example(preset: Preset = PRONOUN) -> WorkedExample:
    """The worked example's head on the preset's sentence with its `designed_weights`."""
    return example_from_weights(preset.sentence, kind_embeddings(preset.sentence_kinds, preset),
                                *designed_weights(preset))
