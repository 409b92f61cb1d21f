"""Causal (masked) self-attention: exact zeros, parity with PyTorch, and prefix-only generation steps."""

import dataclasses

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from core import causal_mask, scaled_dot_product_attention
from core.masking import (
    additive_mask,
    future_weight,
    masked_self_attention,
    max_above_diagonal,
    prefix_attention,
    renormalise_visible,
)
from core.reference import torch_scaled_dot_product_attention


def inputs(t=6, d_model=8, d_k=8, d_v=5, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(t, d_model))
    return x, rng.normal(size=(d_model, d_k)), rng.normal(size=(d_model, d_k)), rng.normal(size=(d_model, d_v))


def test_additive_mask_is_zero_or_minus_infinity():
    m = additive_mask(causal_mask(3))
    np.testing.assert_array_equal(m, [[0, -np.inf, -np.inf], [0, 0, -np.inf], [0, 0, 0]])
    with pytest.raises(ValueError, match="boolean"):
        additive_mask(np.ones((2, 2)))


def test_causal_weights_are_exactly_zero_above_the_diagonal():
    res = masked_self_attention(*inputs(), causal=True)
    upper = np.triu_indices(6, k=1)
    assert np.all(res.weights[upper] == 0.0)
    assert max_above_diagonal(res.weights) == 0.0
    np.testing.assert_allclose(res.weights.sum(1), 1.0, atol=1e-12)
    assert np.all(np.isneginf(res.masked_scores[upper]))
    lower = np.tril_indices(6)
    np.testing.assert_array_equal(res.masked_scores[lower], res.scores[lower])
    np.testing.assert_array_equal(res.mask, np.tril(np.ones((6, 6), dtype=bool)))


def test_matches_pytorch_in_float64():
    x, W_q, W_k, W_v = inputs(t=7, d_v=3, seed=3)
    for causal in (True, False):
        res = masked_self_attention(x, W_q, W_k, W_v, causal=causal)
        q, k, v = (torch.from_numpy(a) for a in (x @ W_q, x @ W_k, x @ W_v))
        expected = F.scaled_dot_product_attention(q, k, v, is_causal=causal).numpy()
        np.testing.assert_allclose(res.output, expected, atol=1e-12)
        scores = q @ k.T / np.sqrt(8)
        if causal:
            scores = scores.masked_fill(~torch.from_numpy(causal_mask(7)), float("-inf"))
        np.testing.assert_allclose(res.weights, torch.softmax(scores, -1).numpy(), atol=1e-12)


def test_unmasked_is_plain_attention_and_leaks_to_the_future():
    x, W_q, W_k, W_v = inputs(seed=1)
    res = masked_self_attention(x, W_q, W_k, W_v, causal=False)
    out, w = scaled_dot_product_attention(x @ W_q, x @ W_k, x @ W_v)
    np.testing.assert_allclose(res.output, out, atol=1e-12)
    np.testing.assert_allclose(res.weights, w, atol=1e-12)
    assert res.mask.all() and np.isfinite(res.masked_scores).all()
    assert max_above_diagonal(res.weights) == pytest.approx(w[np.triu_indices(6, 1)].max())
    assert max_above_diagonal(res.weights) > 0


def test_result_is_frozen_and_read_only():
    res = masked_self_attention(*inputs())
    assert [f.name for f in dataclasses.fields(res)] == [
        "Q", "K", "V", "mask", "scores", "masked_scores", "weights", "output"]
    with pytest.raises(ValueError):
        res.weights[0, 0] = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.weights = None


@pytest.mark.parametrize("step", [1, 2, 4, 6])
def test_a_generation_step_sees_only_the_prefix_and_equals_the_masked_row(step):
    x, W_q, W_k, W_v = inputs(seed=2)
    masked = masked_self_attention(x, W_q, W_k, W_v, causal=True)
    full = masked_self_attention(x, W_q, W_k, W_v, causal=False)
    w, out = prefix_attention(masked.Q, masked.K, masked.V, step)
    assert w.shape == (step,)
    np.testing.assert_allclose(w, masked.weights[step - 1, :step], atol=1e-14)
    np.testing.assert_allclose(out, masked.output[step - 1], atol=1e-12)
    renorm = renormalise_visible(full.weights[step - 1], step)
    np.testing.assert_allclose(renorm, masked.weights[step - 1], atol=1e-14)
    assert np.all(renorm[step:] == 0.0) and renorm.sum() == pytest.approx(1.0)


@settings(max_examples=40, deadline=None)
@given(t=st.integers(1, 10), d_k=st.integers(1, 6), seed=st.integers(0, 10_000), data=st.data())
def test_mask_equals_prefix_softmax_for_any_sizes(t, d_k, seed, data):
    step = data.draw(st.integers(1, t))
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(t, 4))
    W_q, W_k, W_v = (rng.normal(size=(4, d_k)) for _ in range(3))
    res = masked_self_attention(x, W_q, W_k, W_v, causal=True)
    w, _ = prefix_attention(res.Q, res.K, res.V, step)
    np.testing.assert_allclose(res.weights[step - 1, :step], w, atol=1e-12)
    assert max_above_diagonal(res.weights) == 0.0


def test_future_weight_is_the_upper_triangle_total():
    x, W_q, W_k, W_v = inputs(seed=4)
    assert future_weight(masked_self_attention(x, W_q, W_k, W_v, causal=True).weights) == 0.0
    w = masked_self_attention(x, W_q, W_k, W_v, causal=False).weights
    assert future_weight(w) == pytest.approx(np.triu(w, 1).sum()) and future_weight(w) > 0
    assert future_weight(np.array([[0.5, 0.5], [0.2, 0.8]])) == 0.5
    with pytest.raises(ValueError, match="square"):
        future_weight(np.ones((2, 3)))


def test_max_above_diagonal_edge_cases():
    assert max_above_diagonal(np.ones((1, 1))) == 0.0
    assert max_above_diagonal(np.array([[0.5, 0.5], [0.2, 0.8]])) == 0.5
    with pytest.raises(ValueError, match="square"):
        max_above_diagonal(np.ones((2, 3)))


def test_torch_attention_float32_parity():
    x, W_q, W_k, W_v = inputs(t=12, seed=5)
    for causal in (True, False):
        res = masked_self_attention(x, W_q, W_k, W_v, causal=causal)
        got = torch_scaled_dot_product_attention(res.Q, res.K, res.V, is_causal=causal)
        assert got.dtype == np.float32
        assert np.max(np.abs(got - res.output)) < 1e-5


def test_errors_name_the_problem():
    x, W_q, W_k, W_v = inputs()
    with pytest.raises(ValueError, match=r"W_q must be a \(d_model, d_out\) matrix with d_model = 8"):
        masked_self_attention(x, W_q[:5], W_k, W_v)
    with pytest.raises(ValueError, match="same width d_k"):
        masked_self_attention(x, W_q, W_k[:, :3], W_v)
    with pytest.raises(ValueError, match=r"x must be a \(T, d_model\) matrix"):
        masked_self_attention(x[None], W_q, W_k, W_v)
    res = masked_self_attention(x, W_q, W_k, W_v)
    with pytest.raises(ValueError, match="step must be between 1 and T = 6"):
        prefix_attention(res.Q, res.K, res.V, 7)
    with pytest.raises(ValueError, match="positive integer"):
        prefix_attention(res.Q, res.K, res.V, 0)
    with pytest.raises(ValueError, match="same T"):
        prefix_attention(res.Q, res.K[:3], res.V, 1)
    with pytest.raises(ValueError, match="1-D"):
        renormalise_visible(res.weights, 1)
    with pytest.raises(ValueError, match="nothing to renormalise"):
        renormalise_visible(np.array([0.0, 1.0]), 1)


@pytest.mark.parametrize("causal", [True, False])
def test_sentence_self_attention_embeds_adds_positions_and_projects(causal):
    from core import positional_encoding
    from core.embeddings import embed_tokens, random_projections
    from core.masking import sentence_self_attention

    tokens = "the cat sat on the mat".split()
    got = sentence_self_attention(tokens, 8, seed=3, causal=causal)
    X = embed_tokens(tokens, 8, 3) + positional_encoding(6, 8)
    W_q, W_k, W_v = random_projections(8, 3, n=3)
    mask = causal_mask(6) if causal else None
    output, weights = scaled_dot_product_attention(X @ W_q, X @ W_k, X @ W_v, mask=mask)
    np.testing.assert_allclose(got.output, output, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got.weights, weights, rtol=1e-12, atol=1e-12)
