"""`core.multihead_steps`: the intermediates of multi-head attention, head bookkeeping, the PyTorch reference."""

import numpy as np
import pytest
import torch
import torch.nn as nn

from core import multi_head_attention
from core.embeddings import random_projections
from core.multihead_steps import (
    divisors,
    head_of_column,
    multi_head_steps,
    nearest_divisor,
    torch_multihead_attention,
    torch_multihead_module,
)


def test_divisors_are_the_head_counts_that_split_d_model():
    assert divisors(1) == [1]
    assert divisors(12) == [1, 2, 3, 4, 6, 12]
    assert divisors(64) == [1, 2, 4, 8, 16, 32, 64]
    with pytest.raises(ValueError, match="n must be a positive integer, got 0"):
        divisors(0)


@pytest.mark.parametrize("n, target, expected", [(16, 4, 4), (6, 4, 3), (6, 5, 6), (8, 3, 2), (64, 100, 64), (4, 0, 1)])
def test_nearest_divisor_prefers_the_closest_then_the_smaller(n, target, expected):
    assert nearest_divisor(n, target) == expected


def test_head_of_column_gives_each_head_a_contiguous_block():
    np.testing.assert_array_equal(head_of_column(6, 3), [0, 0, 1, 1, 2, 2])
    np.testing.assert_array_equal(head_of_column(4, 1), [0, 0, 0, 0])
    with pytest.raises(ValueError, match=r"d_model=6 is not divisible by n_heads=4; choose one of \[1, 2, 3, 6\]"):
        head_of_column(6, 4)


@pytest.mark.parametrize("d_model, n_heads, t", [(16, 4, 6), (12, 3, 2), (8, 1, 5), (8, 8, 4), (64, 64, 16)])
def test_steps_fit_together_and_match_multi_head_attention(d_model, n_heads, t):
    x = np.random.default_rng(1).normal(size=(t, d_model))
    w_q, w_k, w_v, w_o = random_projections(d_model, seed=2)
    s = multi_head_steps(x, w_q, w_k, w_v, w_o, n_heads)
    d_k = d_model // n_heads
    assert s.d_k == d_k and s.n_heads == n_heads
    assert s.q_heads.shape == (n_heads, t, d_k) and s.weights.shape == (n_heads, t, t)
    assert s.concat.shape == (t, d_model) and s.head_outputs.shape == (n_heads, t, d_k)
    np.testing.assert_allclose(s.q, x @ w_q)
    for h in range(n_heads):  # head h sees columns h*d_k .. (h+1)*d_k - 1 of Q, K and V
        cols = slice(h * d_k, (h + 1) * d_k)
        np.testing.assert_array_equal(s.q_heads[h], s.q[:, cols])
        np.testing.assert_array_equal(s.v_heads[h], s.v[:, cols])
        np.testing.assert_allclose(s.head_outputs[h], s.weights[h] @ s.v_heads[h], atol=1e-14)
        np.testing.assert_array_equal(s.concat[:, cols], s.head_outputs[h])
    np.testing.assert_allclose(s.weights.sum(axis=-1), 1.0)
    np.testing.assert_allclose(s.concat @ w_o, s.output, atol=1e-13)
    out, weights = multi_head_attention(x, w_q, w_k, w_v, w_o, n_heads=n_heads)
    np.testing.assert_array_equal(s.output, out)
    np.testing.assert_array_equal(s.weights, weights)


def test_steps_errors():
    w = list(random_projections(6, seed=0))
    with pytest.raises(ValueError, match=r"one sequence of shape \(T, d_model\), got shape \(1, 3, 6\)"):
        multi_head_steps(np.ones((1, 3, 6)), *w, n_heads=2)
    with pytest.raises(ValueError, match="not divisible by n_heads=4"):
        multi_head_steps(np.ones((3, 6)), *w, n_heads=4)
    with pytest.raises(ValueError, match=r"w_o must have shape \(d_model, d_model\) = \(6, 6\)"):
        multi_head_steps(np.ones((3, 6)), *w[:3], np.ones((6, 5)), n_heads=2)


def test_module_holds_our_weights_the_nn_linear_way():
    w_q, w_k, w_v, w_o = random_projections(8, seed=3)
    mha = torch_multihead_module(w_q, w_k, w_v, w_o, n_heads=2)
    assert isinstance(mha, nn.MultiheadAttention) and mha.in_proj_bias is None and mha.out_proj.bias is None
    assert mha.in_proj_weight.dtype == torch.float64 and mha.batch_first
    in_proj = mha.in_proj_weight.detach().numpy()
    np.testing.assert_array_equal(in_proj[:8], w_q.T)
    np.testing.assert_array_equal(in_proj[8:16], w_k.T)
    np.testing.assert_array_equal(in_proj[16:], w_v.T)
    np.testing.assert_array_equal(mha.out_proj.weight.detach().numpy(), w_o.T)
    with pytest.raises(ValueError, match=r"w_k must have shape \(8, 8\) like w_q, got \(8, 4\)"):
        torch_multihead_module(w_q, np.ones((8, 4)), w_v, w_o, n_heads=2)
    with pytest.raises(ValueError, match="not divisible by n_heads=3"):
        torch_multihead_module(w_q, w_k, w_v, w_o, n_heads=3)


@pytest.mark.parametrize("d_model, n_heads, t", [(16, 4, 3), (12, 6, 7), (4, 1, 2), (64, 64, 16)])
def test_torch_reference_matches_numpy(d_model, n_heads, t):
    x = np.random.default_rng(d_model).normal(size=(t, d_model))
    w = random_projections(d_model, seed=n_heads)
    out, weights = multi_head_attention(x, *w, n_heads=n_heads)
    t_out, t_weights = torch_multihead_attention(x, *w, n_heads=n_heads)
    assert t_out.shape == (t, d_model) and t_weights.shape == (n_heads, t, t)
    np.testing.assert_allclose(t_out, out, atol=1e-13)
    np.testing.assert_allclose(t_weights, weights, atol=1e-13)
    f_out, f_weights = torch_multihead_attention(x, *w, n_heads=n_heads, dtype=torch.float32)
    np.testing.assert_allclose(f_out, out, atol=2e-5)
    np.testing.assert_allclose(f_weights, weights, atol=2e-5)


def test_torch_reference_errors():
    w = random_projections(4, seed=0)
    with pytest.raises(ValueError, match=r"x has shape \(3, 6\) but the weights are \(4, 4\)"):
        torch_multihead_attention(np.ones((3, 6)), *w, n_heads=2)
    with pytest.raises(ValueError, match="one sequence"):
        torch_multihead_attention(np.ones((2, 3, 4)), *w, n_heads=2)


def test_the_steps_keep_each_heads_scaled_scores():
    from core.attention import softmax

    x = np.random.default_rng(1).standard_normal((5, 12))
    steps = multi_head_steps(x, *random_projections(12, 2, n=4), n_heads=3)
    h, i, j = 2, 1, 4
    assert steps.scores[h, i, j] == pytest.approx(steps.q_heads[h, i] @ steps.k_heads[h, j] / np.sqrt(4))
    np.testing.assert_allclose(softmax(steps.scores), steps.weights, rtol=1e-12, atol=1e-15)


def test_head_focus_names_the_sharpest_and_the_flattest_head():
    from core.multihead_steps import head_focus

    uniform = np.full((3, 3), 1 / 3)
    one_hot = np.eye(3)
    half = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5]])
    focus = head_focus(np.stack([half, one_hot, uniform]))  # (H=3, T, T)
    np.testing.assert_allclose(focus.peak, [0.5, 1.0, 1 / 3])
    assert (focus.sharpest, focus.flattest) == (1, 2)
    assert focus.spread == pytest.approx(2 / 3)  # a diagonal cell: 1 in the one-hot head, 1/3 in the uniform one
