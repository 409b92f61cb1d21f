"""The decoder's language: its rules hold in every sentence, and held-out sentences are never trained on."""

import numpy as np
import pytest

from decoder.language import (
    END,
    MAX_SENTENCE,
    PAD_ID,
    SPECIES,
    VOCABULARY,
    all_sentences,
    decode,
    encode,
    split,
)


def test_every_sentence_keeps_the_two_rules_that_need_context():
    for s in all_sentences():
        assert s[0] == "the" and s[-1] == END and len(s) <= MAX_SENTENCE
        subject = next(w for w in s if w.rstrip("s") in SPECIES)
        plural = subject.endswith("s")
        if "then" in s:
            pronoun = s[s.index("then") + 1]
            assert pronoun == ("they" if plural else "it")
            after = s[s.index("then") + 2]
            assert after in ("fell", SPECIES[subject.rstrip("s")])
        for verb in ("sleeps", "sleep", "runs", "run"):
            if verb in s:
                assert verb.endswith("s") != plural


def test_the_language_is_finite_distinct_and_uses_every_word():
    sentences = all_sentences()
    assert len(set(sentences)) == len(sentences) == 2052
    used = {w for s in sentences for w in s}
    assert used == set(VOCABULARY) - {VOCABULARY[PAD_ID]}


@pytest.mark.parametrize("seed", [0, 7])
def test_held_out_sentences_are_never_trained_on(seed):
    corpus = split(0.2, seed)
    train = {tuple(row) for row in corpus.train.tolist()}
    held = {tuple(row) for row in corpus.held_out.tolist()}
    assert not train & held
    assert len(train) + len(held) == len(all_sentences())
    assert [decode([i for i in row if i != PAD_ID]) for row in corpus.held_out.tolist()] == \
        [list(s) for s in corpus.held_out_sentences]


def test_a_split_is_fixed_by_its_seed():
    assert np.array_equal(split(0.2, 3).held_out, split(0.2, 3).held_out)
    assert not np.array_equal(split(0.2, 3).held_out, split(0.2, 4).held_out)


def test_encode_names_a_word_outside_the_vocabulary():
    assert decode(encode(["the", "cat"])) == ["the", "cat"]
    with pytest.raises(KeyError, match="zebra"):
        encode(["the", "zebra"])
