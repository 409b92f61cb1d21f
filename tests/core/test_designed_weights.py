"""The designed weights: every claim the worked example makes about them, checked on the weights themselves and
against PyTorch's attention."""

import numpy as np
import torch
import torch.nn.functional as F

from core.designed_weights import (
    KINDS,
    LOOKS_FOR,
    SENTENCE,
    SENTENCE_KINDS,
    designed_example,
    designed_weights,
    kind_embeddings,
)

EX = designed_example()
WORD = {w: i for i, w in enumerate(SENTENCE)}


def test_the_pronouns_largest_weight_is_on_its_noun():
    assert SENTENCE[int(np.argmax(EX.weights[WORD["it"]]))] == "cat"
    assert EX.weights[WORD["it"], WORD["cat"]] > 0.9


def test_each_adjective_looks_at_the_noun_and_the_noun_at_its_adjectives():
    for adjective in ("small", "tired"):
        assert SENTENCE[int(np.argmax(EX.weights[WORD[adjective]]))] == "cat"
    cat = EX.weights[WORD["cat"]]
    assert set(np.argsort(-cat)[:2]) == {WORD["small"], WORD["tired"]}
    assert cat[[WORD["small"], WORD["tired"]]].sum() > 0.9


def test_a_word_that_looks_for_nothing_spreads_its_attention_evenly():
    others = [i for i, k in enumerate(SENTENCE_KINDS) if LOOKS_FOR[k] is None]
    assert others and np.allclose(EX.weights[others], 1 / len(SENTENCE))


def test_after_attention_the_pronoun_carries_the_nouns_embedding():
    """W_v is the identity: the output of 'it' is mostly the noun dimension."""
    out = EX.output[WORD["it"]]
    assert KINDS[int(np.argmax(out))] == "noun" and out[KINDS.index("noun")] > 0.9


def test_a_query_matches_exactly_the_keys_of_the_kind_it_looks_for():
    W_q, W_k, _ = designed_weights()
    X = kind_embeddings(KINDS)  # one word of each kind
    scores = (X @ W_q) @ (X @ W_k).T  # (kinds, kinds)
    for i, kind in enumerate(KINDS):
        wanted = LOOKS_FOR[kind]
        expected = np.zeros(len(KINDS)) if wanted is None else np.eye(len(KINDS))[KINDS.index(wanted)] * 9.0
        np.testing.assert_array_equal(scores[i], expected)


def test_the_designed_head_is_pytorchs_attention():
    t = [torch.tensor(m, dtype=torch.float64) for m in (EX.Q, EX.K, EX.V)]
    np.testing.assert_allclose(F.scaled_dot_product_attention(*t).numpy(), EX.output, atol=1e-12)
