"""`core.encoder_decoder`: the three attentions, checked against PyTorch's own layers."""

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from core.embeddings import embed_tokens, random_projections
from core.encoder_decoder import attend, encoder_decoder_attention
from core.positional import positional_encoding

SRC = "the cat sat on the mat".split()
TGT = "le chat s'est assis".split()


def torch_attention(x_query, x_memory, W_q, W_k, W_v, causal=False):
    """Single-head `nn.MultiheadAttention` (no bias, identity W_o) as an independent reference."""
    d_model = W_q.shape[0]
    mha = nn.MultiheadAttention(d_model, num_heads=1, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        # torch applies x @ in_proj_weight.T, so it stores the transposes of our x @ W matrices.
        mha.in_proj_weight.copy_(torch.from_numpy(np.concatenate([W_q.T, W_k.T, W_v.T])))
        mha.out_proj.weight.copy_(torch.eye(d_model, dtype=torch.float64))
        q, kv = torch.from_numpy(x_query)[None], torch.from_numpy(x_memory)[None]
        # torch's boolean attn_mask means the opposite of ours: True = NOT allowed.
        not_allowed = torch.ones(len(x_query), len(x_memory), dtype=torch.bool).triu(1) if causal else None
        out, w = mha(q, kv, kv, attn_mask=not_allowed, need_weights=True)
    return out[0].numpy(), w[0].numpy()


@pytest.mark.parametrize("src, tgt, d_model, seed", [(SRC, TGT, 16, 0), (["a"], list("abcdefghijkl"), 4, 7),
                                                     (list("abcdefghijkl"), ["x"], 64, 99), (SRC, SRC, 1, 3)])
def test_all_three_attentions_match_pytorch(src, tgt, d_model, seed):
    r = encoder_decoder_attention(src, tgt, d_model=d_model, seed=seed)
    W = random_projections(d_model, seed, n=9)
    X_src = embed_tokens(src, d_model, seed) + positional_encoding(len(src), d_model)
    X_tgt = embed_tokens(tgt, d_model, seed) + positional_encoding(len(tgt), d_model)
    np.testing.assert_allclose(r.X_src, X_src)
    np.testing.assert_allclose(r.X_tgt, X_tgt)

    enc_out, enc_w = torch_attention(X_src, X_src, *W[0:3])
    np.testing.assert_allclose(r.encoder.weights, enc_w, atol=1e-12)
    memory = X_src + enc_out
    np.testing.assert_allclose(r.memory, memory, atol=1e-12)

    dec_out, dec_w = torch_attention(X_tgt, X_tgt, *W[3:6], causal=True)
    np.testing.assert_allclose(r.decoder.weights, dec_w, atol=1e-12)
    hidden = X_tgt + dec_out
    np.testing.assert_allclose(r.decoder_hidden, hidden, atol=1e-12)

    cross_out, cross_w = torch_attention(hidden, memory, *W[6:9])
    np.testing.assert_allclose(r.cross.weights, cross_w, atol=1e-12)
    np.testing.assert_allclose(r.output, hidden + cross_out, atol=1e-12)


def test_cross_attention_matches_torch_sdpa_on_its_own_q_k_v():
    r = encoder_decoder_attention(SRC, TGT, d_model=8, seed=5)
    t = [torch.tensor(a) for a in (r.cross.Q, r.cross.K, r.cross.V)]  # a copy: the arrays are read-only
    np.testing.assert_allclose(r.cross.attended, F.scaled_dot_product_attention(*t).numpy(), atol=1e-12)


def test_shapes_and_the_non_square_cross_map():
    r = encoder_decoder_attention(SRC, TGT, d_model=8, seed=0)
    assert r.encoder.weights.shape == (6, 6)
    assert r.decoder.weights.shape == (4, 4)
    assert r.cross.weights.shape == (4, 6)  # rows: target (queries), columns: source (keys/values)
    assert r.cross.Q.shape == (4, 8) and r.cross.K.shape == (6, 8) and r.cross.V.shape == (6, 8)
    assert r.memory.shape == (6, 8) and r.output.shape == (4, 8)
    assert r.d_model == 8 and r.src_tokens == tuple(SRC) and r.tgt_tokens == tuple(TGT)
    assert encoder_decoder_attention(["x"], list("abcdefghijkl")).cross.weights.shape == (12, 1)


def test_rows_sum_to_one_and_only_the_decoder_is_masked():
    r = encoder_decoder_attention(SRC, TGT + ["sur", "le", "tapis"], d_model=16, seed=2)
    for block in (r.encoder, r.decoder, r.cross):
        np.testing.assert_allclose(block.weights.sum(axis=1), 1.0, atol=1e-12)
    t = len(r.tgt_tokens)
    assert np.all(r.decoder.weights[np.triu_indices(t, 1)] == 0.0)  # exactly zero above the diagonal
    assert np.all(r.decoder.weights[np.tril_indices(t)] > 0.0)
    np.testing.assert_array_equal(r.decoder.mask, np.tri(t, dtype=bool))
    assert r.encoder.mask is None and r.cross.mask is None
    assert np.all(r.encoder.weights > 0.0) and np.all(r.cross.weights > 0.0)  # bidirectional / full


def test_later_target_words_do_not_change_earlier_cross_attention_rows():
    a = encoder_decoder_attention(SRC, ["le", "chat", "dort"], d_model=16, seed=4)
    b = encoder_decoder_attention(SRC, ["le", "chat", "mange", "vite"], d_model=16, seed=4)
    np.testing.assert_allclose(a.cross.weights[:2], b.cross.weights[:2], atol=1e-12)
    assert not np.allclose(a.cross.weights[2], b.cross.weights[2])
    # ...while every source word changes every cross-attention row.
    c = encoder_decoder_attention(["the", "dog", "sat", "on", "the", "mat"], ["le", "chat", "dort"], 16, 4)
    assert not np.any(np.all(np.isclose(a.cross.weights, c.cross.weights), axis=1))


def test_repeated_tokens_get_distinct_rows():
    r = encoder_decoder_attention(SRC, TGT, d_model=16, seed=0)
    # "the" at positions 0 and 4: same word embedding, different positional encoding.
    assert not np.allclose(r.X_src[0], r.X_src[4])
    assert not np.allclose(r.encoder.weights[0], r.encoder.weights[4])
    assert r.encoder.weights.shape[0] == len(SRC)


def test_deterministic_and_seeded():
    a, b = encoder_decoder_attention(SRC, TGT, 16, 1), encoder_decoder_attention(SRC, TGT, 16, 1)
    np.testing.assert_array_equal(a.cross.weights, b.cross.weights)
    assert not np.allclose(a.cross.weights, encoder_decoder_attention(SRC, TGT, 16, 2).cross.weights)
    with pytest.raises(ValueError, match="read-only"):
        a.cross.weights[0, 0] = 1.0


def test_attend_self_vs_cross():
    rng = np.random.default_rng(0)
    x, m = rng.normal(size=(3, 4)), rng.normal(size=(5, 4))
    W = [rng.normal(size=(4, 2)) for _ in range(3)]
    block = attend(x, m, *W)
    assert block.weights.shape == (3, 5) and block.attended.shape == (3, 2)
    np.testing.assert_allclose(attend(x, x, *W).K, x @ W[1])


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: encoder_decoder_attention([], TGT), "src_tokens is empty"),
        (lambda: encoder_decoder_attention(SRC, []), "tgt_tokens is empty"),
        (lambda: encoder_decoder_attention("the cat", TGT), "not a string"),
        (lambda: encoder_decoder_attention(SRC, TGT, d_model=0), "d_model must be a positive integer"),
        (lambda: attend(np.ones((2, 4)), np.ones((3, 5)), *[np.ones((4, 4))] * 3), r"\(2, 4\) and \(3, 5\)"),
        (lambda: attend(np.ones((2, 4)), np.ones((3, 4)), np.ones((3, 4)), np.ones((4, 4)), np.ones((4, 4))),
         r"W_q must have shape \(d_model, d_k\)"),
    ],
)
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
