"""Toy embeddings: deterministic, position-free, equal tokens equal vectors."""

import numpy as np
import pytest

from core.embeddings import embed_tokens, random_projections, tokenize


def test_tokenize_splits_on_whitespace():
    assert tokenize("  the cat\tsat \n") == ["the", "cat", "sat"]
    assert tokenize("   ") == []


def test_embeddings_depend_on_token_and_seed_only():
    e = embed_tokens(["the", "cat", "the"], 8, seed=1)
    assert e.shape == (3, 8)
    np.testing.assert_array_equal(e[0], e[2])
    assert not np.allclose(e[0], e[1])
    np.testing.assert_array_equal(embed_tokens(["cat"], 8, seed=1)[0], e[1])
    assert not np.allclose(embed_tokens(["cat"], 8, seed=2), e[1])


def test_projections_are_seeded_and_scaled():
    a, b = random_projections(64, seed=3, n=2), random_projections(64, seed=3, n=2)
    np.testing.assert_array_equal(a[0], b[0])
    assert a[0].shape == (64, 64) and abs(a[0].std() * 8 - 1) < 0.05
    assert random_projections(8, n=1, d_out=2)[0].shape == (8, 2)


def test_errors():
    with pytest.raises(ValueError, match="at least one token"):
        embed_tokens([], 4)
    with pytest.raises(ValueError, match="positive integer"):
        embed_tokens(["a"], 0)
