"""`multi_head_attention` against `torch.nn.MultiheadAttention`, and its error messages."""

import numpy as np
import pytest
import torch
import torch.nn as nn

from core import causal_mask, merge_heads, multi_head_attention, split_heads


def torch_mha_and_weights(d_model, n_heads, seed):
    torch.manual_seed(seed)
    mha = nn.MultiheadAttention(d_model, n_heads, bias=False, batch_first=True).double()
    w = mha.in_proj_weight.detach().numpy()
    w_q, w_k, w_v = (w[i * d_model:(i + 1) * d_model].T for i in range(3))
    w_o = mha.out_proj.weight.detach().numpy().T
    return mha, (w_q, w_k, w_v, w_o)


@pytest.mark.parametrize("d_model, n_heads, batch, seq_len", [(16, 4, 1, 3), (12, 3, 2, 7), (8, 1, 3, 5), (8, 8, 1, 4)])
@pytest.mark.parametrize("masked", [False, True])
def test_matches_torch_multihead_attention(d_model, n_heads, batch, seq_len, masked):
    mha, weights = torch_mha_and_weights(d_model, n_heads, seed=d_model + n_heads)
    x = np.random.default_rng(0).normal(size=(batch, seq_len, d_model))
    mask = causal_mask(seq_len) if masked else None
    out, attn = multi_head_attention(x, *weights, n_heads=n_heads, mask=mask)

    xt = torch.from_numpy(x)
    # torch's boolean attn_mask means the opposite: True = NOT allowed.
    t_mask = None if mask is None else torch.from_numpy(~mask)
    with torch.no_grad():
        t_out, t_attn = mha(xt, xt, xt, need_weights=True, average_attn_weights=False, attn_mask=t_mask)
    assert out.shape == (batch, seq_len, d_model) and attn.shape == (batch, n_heads, seq_len, seq_len)
    np.testing.assert_allclose(out, t_out.numpy(), atol=1e-12)
    np.testing.assert_allclose(attn, t_attn.numpy(), atol=1e-12)


def test_unbatched_input_and_per_batch_mask():
    _, weights = torch_mha_and_weights(8, 2, seed=0)
    x = np.random.default_rng(1).normal(size=(2, 5, 8))
    out1, w1 = multi_head_attention(x[0], *weights, n_heads=2)
    assert out1.shape == (5, 8) and w1.shape == (2, 5, 5)
    mask = np.stack([causal_mask(5), np.ones((5, 5), bool)])  # (B, T, T)
    _, w = multi_head_attention(x, *weights, n_heads=2, mask=mask)
    assert np.all(w[0][:, ~causal_mask(5)] == 0.0) and np.all(w[1] > 0)


def test_split_and_merge_heads_are_inverse_and_take_column_blocks():
    x = np.arange(2 * 3 * 8, dtype=float).reshape(2, 3, 8)
    h = split_heads(x, 4)
    assert h.shape == (2, 4, 3, 2)
    np.testing.assert_array_equal(h[:, 1], x[..., 2:4])  # head 1 sees columns 2..3
    np.testing.assert_array_equal(merge_heads(h), x)


def test_errors():
    x, w = np.ones((3, 6)), np.eye(6)
    with pytest.raises(ValueError, match=r"d_model=6 .*\(3, 6\).* not divisible by n_heads=4"):
        multi_head_attention(x, w, w, w, w, n_heads=4)
    with pytest.raises(ValueError, match="n_heads must be a positive integer, got 0"):
        multi_head_attention(x, w, w, w, w, n_heads=0)
    with pytest.raises(ValueError, match=r"w_k must have shape \(d_model, d_model\) = \(6, 6\).*got \(6, 5\)"):
        multi_head_attention(x, w, np.ones((6, 5)), w, w, n_heads=2)
    with pytest.raises(ValueError, match="w_o contains 1 NaN"):
        bad = np.eye(6)
        bad[0, 0] = np.nan
        multi_head_attention(x, w, w, w, bad, n_heads=2)
    with pytest.raises(ValueError, match="does not broadcast"):
        multi_head_attention(x, w, w, w, w, n_heads=2, mask=np.ones((4, 4), bool))
