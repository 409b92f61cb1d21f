"""The designed weights: every claim the worked example makes about them, checked on the weights themselves and
against PyTorch's attention."""

import numpy as np
import torch
import torch.nn.functional as F

import pytest

from core.designed_weights import (
    KINDS,
    LOOKS_FOR,
    PRESETS,
    PREVIOUS_WORD,
    PRONOUN,
    SENTENCE,
    SENTENCE_KINDS,
    Preset,
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


@pytest.mark.parametrize("preset", PRESETS.values(), ids=list(PRESETS))
def test_a_query_matches_exactly_the_keys_of_the_kind_it_looks_for(preset):
    W_q, W_k, _ = designed_weights(preset)
    kinds = preset.kinds
    X = kind_embeddings(kinds, preset)  # one word of each kind
    scores = (X @ W_q) @ (X @ W_k).T  # (kinds, kinds)
    for i, kind in enumerate(kinds):
        wanted = preset.looks_for[kind]
        expected = np.zeros(len(kinds)) if wanted is None else np.eye(len(kinds))[kinds.index(wanted)] * 9.0
        np.testing.assert_array_equal(scores[i], expected)


@pytest.mark.parametrize("preset", PRESETS.values(), ids=list(PRESETS))
def test_the_designed_head_is_pytorchs_attention(preset):
    ex = designed_example(preset)
    t = [torch.tensor(m, dtype=torch.float64) for m in (ex.Q, ex.K, ex.V)]
    np.testing.assert_allclose(F.scaled_dot_product_attention(*t).numpy(), ex.output, atol=1e-12)


def test_the_presets_are_found_by_their_link_value_and_the_first_is_the_pronouns():
    """The link's ``weights=designed`` keeps meaning the pronoun preset; each preset is found under its own name."""
    assert list(PRESETS) == ["designed", "previous word"] and PRESETS["designed"] is PRONOUN
    assert all(PRESETS[name].name == name for name in PRESETS)
    assert (KINDS, LOOKS_FOR, SENTENCE, SENTENCE_KINDS) == (PRONOUN.kinds, PRONOUN.looks_for, PRONOUN.sentence,
                                                            PRONOUN.sentence_kinds)


def test_every_word_looks_at_the_word_just_before_it():
    """The previous-word preset: each word after the first puts its largest weight on the one before; the first,
    with nothing before it, spreads evenly; and the embeddings hold positions, not words."""
    ex = designed_example(PREVIOUS_WORD)
    t = len(PREVIOUS_WORD.sentence)
    assert [int(np.argmax(ex.weights[i])) for i in range(1, t)] == list(range(t - 1))
    np.testing.assert_allclose(ex.weights[0], 1 / t)
    np.testing.assert_array_equal(ex.X, np.eye(t))
    # W_v is the identity: after attention each word carries mostly the position before its own
    assert [int(np.argmax(ex.output[i])) for i in range(1, t)] == list(range(t - 1))


def test_a_preset_whose_words_or_queries_name_no_kind_is_refused():
    with pytest.raises(ValueError, match="every word"):
        Preset("x", "kind", ("a", "b"), {"a": "b", "b": None}, ("w",), ("c",))
    with pytest.raises(ValueError, match="looks_for"):
        Preset("x", "kind", ("a", "b"), {"a": "z", "b": None}, ("w",), ("a",))
