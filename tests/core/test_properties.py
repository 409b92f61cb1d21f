"""Property-based tests (hypothesis) of the attention maths."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from core import causal_mask, multi_head_attention, scaled_dot_product_attention, softmax

finite = st.floats(-10, 10, allow_nan=False, allow_infinity=False)


@st.composite
def qkv(draw):
    t_q, t_k, d_k, d_v = (draw(st.integers(1, 6)) for _ in range(4))
    q = draw(arrays(np.float64, (t_q, d_k), elements=finite))
    k = draw(arrays(np.float64, (t_k, d_k), elements=finite))
    v = draw(arrays(np.float64, (t_k, d_v), elements=finite))
    return q, k, v


@settings(max_examples=60, deadline=None)
@given(qkv())
def test_weight_rows_sum_to_one(args):
    out, w = scaled_dot_product_attention(*args)
    assert np.all(w >= 0)
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-12)
    assert np.all(np.isfinite(out))


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 6)), elements=finite), finite)
def test_softmax_is_shift_invariant(x, c):
    np.testing.assert_allclose(softmax(x + c), softmax(x), atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 7), st.sampled_from([(8, 1), (8, 2), (12, 3), (16, 4)]), st.data())
def test_self_attention_is_permutation_equivariant(seed, seq_len, dims, data):
    d_model, n_heads = dims
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(seq_len, d_model))
    w = [rng.normal(size=(d_model, d_model)) / np.sqrt(d_model) for _ in range(4)]
    perm = np.array(data.draw(st.permutations(range(seq_len))))
    out, attn = multi_head_attention(x, *w, n_heads=n_heads)
    out_p, attn_p = multi_head_attention(x[perm], *w, n_heads=n_heads)
    np.testing.assert_allclose(out_p, out[perm], atol=1e-10)  # rows of the output simply follow the inputs
    np.testing.assert_allclose(attn_p, attn[:, perm][:, :, perm], atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(qkv().filter(lambda a: a[0].shape[0] == a[1].shape[0]))
def test_causal_weights_are_exactly_zero_above_the_diagonal(args):
    q, k, v = args
    n = q.shape[0]
    _, w = scaled_dot_product_attention(q, k, v, mask=causal_mask(n))
    assert np.all(w[np.triu_indices(n, 1)] == 0.0)
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-12)
