"""`core.permutation`: parsing permutations, and self-attention's indifference to order (until PE is added)."""

import numpy as np
import pytest
import torch
import torch.nn as nn
from hypothesis import given, settings
from hypothesis import strategies as st

from core import multi_head_attention, positional_encoding
from core.embeddings import embed_tokens, random_projections
from core.permutation import (
    check_permutation,
    default_permutation,
    format_permutation,
    inverse_permutation,
    parse_permutation,
    permutation_check,
    random_permutation,
    torch_permutation_difference,
)

TOKENS = "the cat sat on the mat".split()


def inputs(d_model=16, seed=0, tokens=TOKENS):
    return embed_tokens(tokens, d_model, seed), random_projections(d_model, seed)


@pytest.mark.parametrize("text, expected", [("2,0,1", [2, 0, 1]), (" 2 0 1 ", [2, 0, 1]), ("2, 0,1,", [2, 0, 1]),
                                            ("0,1,2", [0, 1, 2])])
def test_parse_permutation_accepts_commas_and_spaces(text, expected):
    perm = parse_permutation(text, 3)
    assert perm.dtype == np.int64
    np.testing.assert_array_equal(perm, expected)


@pytest.mark.parametrize("text, n, message", [
    ("abc", 3, r"'abc' is not a whole number; type an ordering of 0\.\.2"),
    ("1.5,0,2", 3, r"'1\.5' is not a whole number"),
    ("", 3, "the permutation is empty; type 3 numbers"),
    (" , ", 3, "the permutation is empty"),
    ("0,0,1", 3, r"0 repeated and 2 missing: each of 0\.\.2 must appear exactly once"),
    ("0,1", 3, "the permutation has 2 number\\(s\\) but there are 3 tokens"),
    ("5,1", 3, "5 out of range: positions run from 0 to 2"),
    ("0,0,1,2", 3, r"^0 repeated: each of 0\.\.2 must appear exactly once"),
    ("5,1", 2, "5 out of range: positions run from 0 to 1"),
    ("0,1,-1", 3, "-1 out of range"),
])
def test_parse_permutation_names_the_problem(text, n, message):
    with pytest.raises(ValueError, match=message):
        parse_permutation(text, n)


def test_check_permutation_rejects_non_integer_arrays():
    with pytest.raises(ValueError, match="1-D list of whole numbers"):
        check_permutation(np.array([0.0, 1.0]), 2)
    with pytest.raises(ValueError, match="1-D list of whole numbers"):
        check_permutation(np.array([[0, 1]]), 2)
    np.testing.assert_array_equal(check_permutation((1, 0), 2), [1, 0])


def test_default_permutation_is_the_lessons_for_three_tokens():
    np.testing.assert_array_equal(default_permutation(3), [2, 0, 1])  # perm = torch.tensor([2, 0, 1])
    np.testing.assert_array_equal(default_permutation(1), [0])


def test_random_permutation_is_seeded_and_never_the_identity():
    for n in (2, 3, 6, 16):
        for seed in range(20):
            perm = random_permutation(n, seed)
            assert sorted(perm) == list(range(n)) and np.any(perm != np.arange(n))
    np.testing.assert_array_equal(random_permutation(6, 5), random_permutation(6, 5))
    np.testing.assert_array_equal(random_permutation(1, 0), [0])


@given(st.permutations(list(range(8))))
def test_format_parse_and_inverse_round_trip(perm):
    perm = np.array(perm)
    np.testing.assert_array_equal(parse_permutation(format_permutation(perm), 8), perm)
    x = np.arange(8) * 10
    np.testing.assert_array_equal(x[perm][inverse_permutation(perm)], x)
    np.testing.assert_array_equal(perm[inverse_permutation(perm)], np.arange(8))


def test_without_pe_attention_just_reorders_outputs_and_maps():
    x, w = inputs()
    perm = np.array([5, 0, 1, 2, 3, 4])
    c = permutation_check(x, w, perm, n_heads=4)
    np.testing.assert_array_equal(c.x_perm, x[perm])
    np.testing.assert_allclose(c.output_perm, c.output[perm], atol=1e-14)  # Attn(PX) = P Attn(X)
    assert c.output_diff < 1e-12 and c.weights_diff < 1e-12
    np.testing.assert_allclose(c.weights_perm, c.weights[:, perm][:, :, perm], atol=1e-14)  # P A P^T per head
    np.testing.assert_allclose(c.output_unpermuted[perm], c.output_perm)
    np.testing.assert_allclose(c.output, multi_head_attention(x, *w, n_heads=4)[0])


def test_with_pe_the_symmetry_breaks():
    x, w = inputs()
    perm = default_permutation(6)
    c = permutation_check(x, w, perm, n_heads=4, add_pe=True)
    pe = positional_encoding(6, 16)
    np.testing.assert_allclose(c.x, x + pe)
    np.testing.assert_allclose(c.x_perm, x[perm] + pe)  # the encoding stays with the position
    assert c.add_pe and c.output_diff > 1e-3 and c.weights_diff > 1e-3
    # The identity permutation is the one case that stays equal.
    assert permutation_check(x, w, np.arange(6), n_heads=4, add_pe=True).output_diff == 0.0


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 10).flatmap(lambda t: st.tuples(st.just(t), st.permutations(list(range(t))))),
       st.sampled_from([(8, 1), (8, 2), (12, 3), (16, 4)]), st.integers(0, 50))
def test_permutation_invariance_holds_for_any_sizes(t_perm, dims, seed):
    t, perm = t_perm
    d_model, n_heads = dims
    x = np.random.default_rng(seed).normal(size=(t, d_model))
    c = permutation_check(x, random_projections(d_model, seed), perm, n_heads=n_heads)
    assert c.output_diff < 1e-12 and c.weights_diff < 1e-12


def test_permutation_check_errors():
    x, w = inputs()
    with pytest.raises(ValueError, match="the permutation has 3 number"):
        permutation_check(x, w, [2, 0, 1])
    with pytest.raises(ValueError, match=r"projections must be \(W_q, W_k, W_v, W_o\), got 3"):
        permutation_check(x, w[:3], default_permutation(6))
    with pytest.raises(ValueError, match="one sequence"):
        permutation_check(x[None], w, default_permutation(6))


@pytest.mark.parametrize("add_pe", [False, True])
def test_torch_check_agrees_with_numpy(add_pe):
    x, w = inputs(seed=3)
    perm = np.array([3, 5, 0, 1, 4, 2])
    numpy_diff = permutation_check(x, w, perm, n_heads=4, add_pe=add_pe).output_diff
    torch32 = torch_permutation_difference(x, w, perm, n_heads=4, add_pe=add_pe)
    torch64 = torch_permutation_difference(x, w, perm, n_heads=4, add_pe=add_pe, dtype=torch.float64)
    if add_pe:
        assert torch64 == pytest.approx(numpy_diff, rel=1e-9) and torch32 == pytest.approx(numpy_diff, rel=1e-4)
    else:
        assert torch64 < 1e-12 and 0 < torch32 < 1e-5


def test_the_lessons_own_check_with_a_fresh_module():
    """The lesson's snippet, verbatim in spirit: a default nn.MultiheadAttention (with biases) is order-blind too."""
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(embed_dim=16, num_heads=4, batch_first=True)
    x = torch.randn(1, 3, 16)
    perm = torch.tensor([2, 0, 1])
    with torch.no_grad():
        out, _ = mha(x, x, x)
        out_permuted, _ = mha(x[:, perm, :], x[:, perm, :], x[:, perm, :])
    out_unpermuted = torch.empty_like(out_permuted)
    out_unpermuted[:, perm, :] = out_permuted
    assert (out - out_unpermuted).abs().max().item() < 1e-6
