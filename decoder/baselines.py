r"""What simpler predictors score on the held-out sentences, to say what the decoder's scores mean.

* The **bigram** predictor knows only the previous word: ``p(w | v) = count(v w) / count(v ·)``. Its counts are
  taken from the held-out sentences themselves, so it is the best any bigram model can do on them: a bigram
  trained on other sentences can only do worse.
* The **grammar** predictor knows the language: every sentence equally likely, ``p(w | x_{\le t})`` is the share of
  the language's sentences starting with ``x_{\le t}`` that continue with ``w``. Nothing can do better on average.

Both score like the decoder (`decoder.trainer.Scores`): mean cross-entropy over every held-out next word, and
accuracy of the most likely word (ties to the lowest token id, as ``argmax`` breaks them).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from decoder.language import TOKEN_ID, VOCABULARY, Corpus, all_sentences
from decoder.model import Decoder
from decoder.trainer import Scores, next_word_logits, scores_of
from training.trainer import deterministic_torch

Predictor = Callable[[tuple[str, ...]], np.ndarray]  # the words so far -> p(next word) over VOCABULARY


def _distribution(counts: Counter[str]) -> np.ndarray:
    p = np.zeros(len(VOCABULARY))
    for word, n in counts.items():
        p[TOKEN_ID[word]] = n
    return p / p.sum()


def bigram_predictor(sentences: Sequence[Sequence[str]]) -> Predictor:
    """``p(next | previous word)`` counted over `sentences`."""
    follows: dict[str, Counter[str]] = defaultdict(Counter)
    for s in sentences:
        for v, w in zip(s[:-1], s[1:], strict=True):
            follows[v][w] += 1
    table = {v: _distribution(c) for v, c in follows.items()}
    return lambda prefix: table[prefix[-1]]


def grammar_predictor() -> Predictor:
    """``p(next | every word so far)`` under the language, every sentence equally likely."""
    follows: dict[tuple[str, ...], Counter[str]] = defaultdict(Counter)
    for s in all_sentences():
        for t in range(1, len(s)):
            follows[tuple(s[:t])][s[t]] += 1
    table = {prefix: _distribution(c) for prefix, c in follows.items()}
    return lambda prefix: table[prefix]


def score_predictor(predict: Predictor, sentences: Sequence[Sequence[str]]) -> Scores:
    """Mean next-word cross-entropy and argmax accuracy of `predict` over every word of `sentences` after the first."""
    nll, right, n = 0.0, 0, 0
    for s in sentences:
        for t in range(1, len(s)):
            p = predict(tuple(s[:t]))
            target = TOKEN_ID[s[t]]
            nll -= float(np.log(p[target]))
            right += int(np.argmax(p) == target)
            n += 1
    return Scores(nll / n, right / n)


@dataclass(frozen=True)
class Quality:
    """The decoder's held-out scores beside the bigram's and the grammar's, and on the words that need context.

    Attributes:
        context_words: held-out next words that the language fixes (the grammar gives them probability 1) but the
            previous word alone does not (the bigram gives them less): ``it`` or ``they``, the animal's sound,
            ``sleeps`` or ``sleep``.
        model_context, bigram_context: the share of those words each gets right.
    """

    model: Scores
    bigram: Scores
    grammar: Scores
    context_words: int
    model_context: float
    bigram_context: float


def quality(model: Decoder, corpus: Corpus, grammar: Predictor | None = None) -> Quality:
    """Score `model` on `corpus`'s held-out sentences beside the bigram and grammar predictors (`grammar`: the
    language's `grammar_predictor`, if one is at hand: it is the same for every corpus)."""
    sentences = corpus.held_out_sentences
    bigram, grammar = bigram_predictor(sentences), grammar or grammar_predictor()
    with deterministic_torch(), torch.no_grad():
        logits, targets = next_word_logits(model, torch.as_tensor(corpus.held_out))  # (N, V), (N,)
    model_right = iter((logits.argmax(-1) == targets).tolist())  # (N,): sentence after sentence, word by word
    context, model_hits, bigram_hits = 0, 0, 0
    for s in sentences:
        for t in range(1, len(s)):
            prefix, target, right = tuple(s[:t]), TOKEN_ID[s[t]], next(model_right)
            if grammar(prefix)[target] == 1.0 and bigram(prefix)[target] < 1.0:
                context += 1
                model_hits += int(right)
                bigram_hits += int(np.argmax(bigram(prefix)) == target)
    return Quality(scores_of(logits, targets), score_predictor(bigram, sentences),
                   score_predictor(grammar, sentences), context, model_hits / max(context, 1),
                   bigram_hits / max(context, 1))
