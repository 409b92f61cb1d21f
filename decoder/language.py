"""A small language for the decoder to learn: every sentence a little grammar over the lesson's words can make.

Five patterns, each word chosen from a short list, and each noun with or without an adjective (small, big)::

    the ANIMAL sat on the PLACE .
    the ANIMAL chased|saw the OTHER .
    the ANIMAL chased|saw the OTHER and then it|they SOUND .
    the ANIMAL on|near the PLACE sleeps|sleep|runs|run .
    the ANIMAL sat on the PLACE and then it|they fell fast asleep .

Two rules make the context matter, so that the previous word alone cannot predict the next one:

* **number**: a singular animal (``cat``) takes ``it`` and ``sleeps``/``runs``; a plural one (``cats``) takes
  ``they`` and ``sleep``/``run``, even with other words in between;
* **the pronoun points back**: ``it`` or ``they`` is always the subject, the first animal, and the sound that
  follows is that animal's own (a cat purred, a dog barked, a bird sang).

The language is finite: `all_sentences` lists it, in a fixed order, and `split` deals it into sentences to train
on and held-out sentences that training never sees.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SPECIES: dict[str, str] = {"cat": "purred", "dog": "barked", "bird": "sang"}
#: Every animal, singular then plural: ``cat``, ``cats``, ``dog``, ``dogs``, …
ANIMALS: tuple[str, ...] = tuple(w for s in SPECIES for w in (s, s + "s"))
PLACES: tuple[str, ...] = ("mat", "rug", "sofa")
ADJECTIVES: tuple[str, ...] = ("small", "big")
#: A present-tense verb for a singular and for a plural subject.
PRESENT: dict[str, str] = {"sleeps": "sleep", "runs": "run"}
END = "."
PAD = "<pad>"
#: Every word of the language, in the order of its token ids; the padding token, which is never predicted, last.
VOCABULARY: tuple[str, ...] = (
    "the", *ADJECTIVES, *ANIMALS, "sat", "on", "near", *PLACES, "chased", "saw", "and", "then", "it", "they",
    *SPECIES.values(), *(w for pair in PRESENT.items() for w in pair), "fell", "fast", "asleep", END, PAD,
)
TOKEN_ID: dict[str, int] = {w: i for i, w in enumerate(VOCABULARY)}
PAD_ID = TOKEN_ID[PAD]
END_ID = TOKEN_ID[END]


def _plural(animal: str) -> bool:
    return animal.endswith("s")


def _pronoun(animal: str) -> str:
    return "they" if _plural(animal) else "it"


def _sound(animal: str) -> str:
    return SPECIES[animal.rstrip("s")]


def _noun_phrases(nouns: Sequence[str]) -> list[tuple[tuple[str, ...], str]]:
    """``(words, noun)`` for "the NOUN" and "the ADJECTIVE NOUN", for every noun."""
    return [(("the", *adjective, noun), noun) for noun in nouns for adjective in ((), *((a,) for a in ADJECTIVES))]


def all_sentences() -> list[tuple[str, ...]]:
    """Every sentence of the language, each a tuple of words ending with ``"."``, in a fixed order."""
    out: list[tuple[str, ...]] = []
    animals, places = _noun_phrases(ANIMALS), _noun_phrases(PLACES)
    for (subject, a), (where, _) in itertools.product(animals, places):
        out.append((*subject, "sat", "on", *where, END))
        out.append((*subject, "sat", "on", *where, "and", "then", _pronoun(a), "fell", "fast", "asleep", END))
    for (subject, a), verb, (other, b) in itertools.product(animals, ("chased", "saw"), animals):
        if a != b:
            out.append((*subject, verb, *other, END))
            out.append((*subject, verb, *other, "and", "then", _pronoun(a), _sound(a), END))
    for (subject, a), prep, (where, _), (singular, plural) in itertools.product(
            animals, ("on", "near"), places, PRESENT.items()):
        out.append((*subject, prep, *where, plural if _plural(a) else singular, END))
    return out


#: The longest sentence, in tokens.
MAX_SENTENCE = max(len(s) for s in all_sentences())


@dataclass(frozen=True)
class Corpus:
    """The language dealt into sentences to train on and held-out ones, as padded token ids.

    Attributes:
        train, held_out: ``(N, MAX_SENTENCE)`` int64 token ids, each row a sentence padded with `PAD_ID`.
        held_out_sentences: the held-out sentences as words, in the rows' order.
    """

    train: np.ndarray
    held_out: np.ndarray
    held_out_sentences: tuple[tuple[str, ...], ...]


def encode(words: Sequence[str]) -> list[int]:
    """Token ids of `words`; `KeyError` names the first word outside `VOCABULARY`."""
    return [TOKEN_ID[w] for w in words]


def decode(ids: Sequence[int]) -> list[str]:
    return [VOCABULARY[int(i)] for i in ids]


def _padded(sentences: Sequence[Sequence[str]]) -> np.ndarray:
    ids = np.full((len(sentences), MAX_SENTENCE), PAD_ID, dtype=np.int64)  # (N, MAX_SENTENCE)
    for row, sentence in enumerate(sentences):
        ids[row, : len(sentence)] = encode(sentence)
    return ids


def split(held_out_share: float, seed: int) -> Corpus:
    """Deal every sentence of the language, shuffled by `seed`, into training and held-out sentences."""
    if not 0.0 < held_out_share < 1.0:
        raise ValueError(f"held_out_share must lie strictly between 0 and 1, got {held_out_share!r}.")
    sentences = all_sentences()
    order = np.random.default_rng(seed).permutation(len(sentences))
    n_held = round(held_out_share * len(sentences))
    held = [sentences[i] for i in order[:n_held]]
    return Corpus(train=_padded([sentences[i] for i in order[n_held:]]), held_out=_padded(held),
                  held_out_sentences=tuple(held))
