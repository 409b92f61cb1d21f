r"""Designed weights for the worked example: W_q and W_k made by hand so that every query asks for something a
student can name ("a pronoun looks for the noun", "a noun looks for its adjectives").

Each token's embedding says what kind of word it is, one dimension per kind (`KINDS`). W_k hands every token a
key that says the same; W_q turns each kind into a query for the kind it looks for (`LOOKS_FOR`). A query and a
key then match, with score :math:`s^2`, exactly when the key is of the kind the query looks for, and score 0
otherwise:

.. math:: (x_i W_q) \cdot (x_j W_k) = s^2\,[\,\text{kind}_j = \text{looks\_for}(\text{kind}_i)\,]

W_v is the identity, so a token's output is the blend of the kinds it attended to: after attention the pronoun
carries the noun's embedding. A kind that looks for nothing has a zero query and spreads its attention evenly.
"""

from __future__ import annotations

import numpy as np

from core.worked_example import WorkedExample, example_from_weights

#: The kinds of word, one embedding dimension each, in this order.
KINDS: tuple[str, ...] = ("noun", "pronoun", "adjective", "other")
#: What a query of each kind asks for (None: nothing, an even spread), the pronoun first: the example's headline.
LOOKS_FOR: dict[str, str | None] = {"pronoun": "noun", "noun": "adjective", "adjective": "noun", "other": None}
#: The designed example's sentence and the kind of each of its words.
SENTENCE: tuple[str, ...] = ("the", "small", "cat", "sat", "because", "it", "was", "tired")
SENTENCE_KINDS: tuple[str, ...] = ("other", "adjective", "noun", "other", "other", "pronoun", "other", "adjective")
#: s, the size of every nonzero entry of W_q and W_k: a match scores s² / √d_k = 9 / 2 against 0.
STRENGTH = 3.0


def kind_embeddings(kinds: tuple[str, ...]) -> np.ndarray:
    """X ``(T, len(KINDS))``: one row per word, 1 in its kind's dimension."""
    X = np.zeros((len(kinds), len(KINDS)))
    X[np.arange(len(kinds)), [KINDS.index(k) for k in kinds]] = 1.0
    return X


def designed_weights() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """W_q, W_k, W_v ``(d, d)`` with ``d = len(KINDS)``: query asks for `LOOKS_FOR`, key says its kind, value copies."""
    d = len(KINDS)
    W_q = np.zeros((d, d))
    for kind, wanted in LOOKS_FOR.items():
        if wanted is not None:
            W_q[KINDS.index(kind), KINDS.index(wanted)] = STRENGTH  # kind's row -> a query in the wanted kind's column
    W_k = STRENGTH * np.eye(d)  # a key in its own kind's column
    return W_q, W_k, np.eye(d)


def designed_example() -> WorkedExample:
    """The worked example's head on `SENTENCE` with `designed_weights`."""
    return example_from_weights(SENTENCE, kind_embeddings(SENTENCE_KINDS), *designed_weights())
