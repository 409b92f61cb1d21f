"""`core.scaling`: random Q/K/V, entropy, the softmax Jacobian (against autograd) and the d_k sweep."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from core.attention import scaled_dot_product_attention, softmax
from core.reference import torch_scaled_dot_product_attention
from core.scaling import (
    POWERS_OF_TWO_D_K,
    random_qkv,
    row_entropy,
    score_sweep,
    softmax_jacobian,
    softmax_jacobian_norm,
    weight_stats,
)


def autograd_jacobian(s: np.ndarray) -> np.ndarray:
    """d softmax(s) / d s by PyTorch's autograd, for one score vector."""
    return torch.autograd.functional.jacobian(lambda x: torch.softmax(x, dim=-1), torch.from_numpy(s)).numpy()


# --- random_qkv -------------------------------------------------------------------------------------------------------

def test_random_qkv_shapes_determinism_and_nesting():
    q, k, v = random_qkv(8, 64, seed=3)
    assert q.shape == k.shape == v.shape == (8, 64)
    np.testing.assert_array_equal(random_qkv(8, 64, seed=3)[0], q)
    assert not np.allclose(random_qkv(8, 64, seed=4)[0], q)
    # more tokens only add rows, a wider d_k only adds columns
    big_q, big_k, _ = random_qkv(32, 1024, seed=3)
    np.testing.assert_array_equal(big_q[:8, :64], q)
    np.testing.assert_array_equal(big_k[:8, :64], k)
    assert not np.allclose(q, k)


@pytest.mark.parametrize("args, message", [
    ((33, 4), r"at most \(32, 1024\).*\(33, 4\)"),
    ((4, 2048), r"\(4, 2048\)"),
    ((0, 4), "seq_len must be a positive integer"),
    ((4, 2.0), "d_k must be a positive integer"),
])
def test_random_qkv_rejects_bad_sizes(args, message):
    with pytest.raises(ValueError, match=message):
        random_qkv(*args)


# --- entropy ----------------------------------------------------------------------------------------------------------

def test_row_entropy_limits_and_torch():
    assert row_entropy(np.full(8, 1 / 8)) == pytest.approx(np.log(8), abs=1e-15)
    assert row_entropy(np.eye(4)[2]) == 0.0
    p = softmax(np.random.default_rng(0).normal(size=(3, 5, 7)))
    expected = torch.distributions.Categorical(probs=torch.from_numpy(p)).entropy().numpy()
    np.testing.assert_allclose(row_entropy(p), expected, atol=1e-14)
    with pytest.raises(ValueError, match="negative"):
        row_entropy(np.array([1.2, -0.2]))


# --- the softmax Jacobian ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n, spread", [(2, 1.0), (5, 1.0), (8, 10.0), (16, 0.1)])
def test_softmax_jacobian_matches_autograd(n, spread):
    s = np.random.default_rng(n).normal(size=n) * spread
    jac = softmax_jacobian(softmax(s))
    np.testing.assert_allclose(jac, autograd_jacobian(s), atol=1e-15)
    np.testing.assert_allclose(softmax_jacobian_norm(softmax(s)), np.linalg.norm(autograd_jacobian(s)), rtol=1e-12)


def test_softmax_jacobian_is_batched():
    s = np.random.default_rng(1).normal(size=(2, 3, 6))
    jac = softmax_jacobian(softmax(s))
    assert jac.shape == (2, 3, 6, 6)
    for idx in np.ndindex(2, 3):
        np.testing.assert_allclose(jac[idx], autograd_jacobian(s[idx]), atol=1e-15)
    np.testing.assert_allclose(softmax_jacobian_norm(softmax(s)), np.linalg.norm(jac, axis=(-2, -1)), rtol=1e-12)


def test_jacobian_norm_limits():
    for n in (2, 8, 32):
        assert softmax_jacobian_norm(np.full(n, 1 / n)) == pytest.approx(np.sqrt(n - 1) / n, rel=1e-14)
    assert softmax_jacobian_norm(np.eye(5)[1]) == 0.0


def test_jacobian_norm_stays_accurate_when_saturated():
    """Where the simple formula sum(p^2) - 2 sum(p^3) + sum(p^2)^2 cancels to noise, this one does not."""
    for gap in (10.0, 20.0, 30.0):
        p = softmax(np.array([0.0, -gap]))
        exact = 2 * p[0] * p[1]  # ||[[a, -a], [-a, a]]||_F with a = p0 p1
        assert softmax_jacobian_norm(p) == pytest.approx(exact, rel=1e-9)


@settings(max_examples=50, deadline=None)
@given(arrays(np.float64, st.integers(2, 12), elements=st.floats(-30, 30)))
def test_jacobian_norm_property(s):
    p = softmax(s)
    assert softmax_jacobian_norm(p) == pytest.approx(np.linalg.norm(autograd_jacobian(s)), rel=1e-9, abs=1e-15)


def test_weight_stats():
    w = np.array([[0.5, 0.5], [1.0, 0.0]])
    stats = weight_stats(w)
    assert stats.max_weight == pytest.approx(0.75)
    assert stats.entropy == pytest.approx(np.log(2) / 2)
    assert stats.jacobian_norm == pytest.approx(0.5 / 2)  # uniform over 2: sqrt(1)/2, one-hot: 0


# --- the d_k sweep ----------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sweep8():
    return score_sweep(8, seed=0)


def test_sweep_variance_is_d_k_raw_and_1_scaled(sweep8):
    np.testing.assert_array_equal(sweep8.d_k, POWERS_OF_TWO_D_K)
    np.testing.assert_allclose(sweep8.var_raw / sweep8.d_k, 1.0, atol=0.15)
    np.testing.assert_allclose(sweep8.var_scaled, 1.0, atol=0.15)
    np.testing.assert_allclose(sweep8.var_scaled, sweep8.var_raw / sweep8.d_k, rtol=1e-12)


def test_unscaled_softmax_saturates_and_scaled_does_not(sweep8):
    assert sweep8.max_weight_raw[-1] > 0.9 and sweep8.max_weight_scaled[-1] < 0.6
    assert np.all(np.diff(sweep8.max_weight_raw) > 0)  # more saturated at every doubling of d_k
    assert np.ptp(sweep8.max_weight_scaled) < 0.1 and np.ptp(sweep8.entropy_scaled) < 0.2
    assert sweep8.entropy_raw[-1] < 0.2 < 1.5 < sweep8.entropy_scaled[-1] <= np.log(8)
    assert sweep8.jacobian_norm_raw[-1] < 0.25 * sweep8.jacobian_norm_scaled[-1]
    # at d_k = 1 scaling divides by 1: the two series start at the same point
    assert sweep8.max_weight_raw[0] == sweep8.max_weight_scaled[0]


def test_sweep_statistics_are_those_of_the_drawn_scores():
    """Re-draw the same numbers by hand for one d_k and compute every statistic directly."""
    sweep = score_sweep(4, seed=5, d_ks=[3], n_rows=40)
    rng = np.random.default_rng([5, 1])
    q = rng.standard_normal(size=(10, 4, 3))
    k_t = rng.standard_normal(size=(10, 3, 4))
    raw = q @ k_t
    assert sweep.n_samples == 10 and sweep.seq_len == 4
    for suffix, s in (("raw", raw), ("scaled", raw / np.sqrt(3))):
        p = torch.softmax(torch.from_numpy(s), -1).numpy()
        assert getattr(sweep, f"var_{suffix}")[0] == pytest.approx(s.var())
        assert getattr(sweep, f"max_weight_{suffix}")[0] == pytest.approx(p.max(-1).mean())
        assert getattr(sweep, f"entropy_{suffix}")[0] == pytest.approx((-(p * np.log(p)).sum(-1)).mean())
        assert getattr(sweep, f"jacobian_norm_{suffix}")[0] == pytest.approx(
            np.mean([np.linalg.norm(np.diag(r) - np.outer(r, r)) for r in p.reshape(-1, 4)]))


def test_sweep_is_deterministic_read_only_and_seeded():
    a, b, c = score_sweep(4, seed=1, n_rows=64), score_sweep(4, seed=1, n_rows=64), score_sweep(4, seed=2, n_rows=64)
    np.testing.assert_array_equal(a.var_raw, b.var_raw)
    assert not np.allclose(a.var_raw, c.var_raw)
    assert a.n_samples == 16
    with pytest.raises(ValueError):
        a.var_raw[0] = 0.0


@pytest.mark.parametrize("d_ks", [[], [4, 2], [0, 1], [1.5, 2]])
def test_sweep_rejects_bad_widths(d_ks):
    with pytest.raises(ValueError, match="strictly increasing list of positive integers"):
        score_sweep(4, d_ks=d_ks)


# --- the PyTorch cross-check ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("d_k, scale", [(1, None), (64, None), (64, 1.0), (1024, 1.0)])
def test_torch_attention_matches_ours(d_k, scale):
    q, k, v = random_qkv(8, d_k, seed=0)
    ours, _ = scaled_dot_product_attention(q, k, v, scale=scale)
    theirs = torch_scaled_dot_product_attention(q, k, v, scale=scale, dtype=np.float64)
    assert theirs.dtype == np.float64
    np.testing.assert_allclose(ours, theirs, atol=1e-12)
    direct = F.scaled_dot_product_attention(*(torch.from_numpy(a.copy()) for a in (q, k, v)), scale=scale).numpy()
    np.testing.assert_array_equal(theirs, direct)


@pytest.mark.parametrize("scaled", [True, False])
def test_scaling_example_is_torchs_attention_over_the_scores_it_shows(scaled):
    from core.scaling import scaling_example

    ex = scaling_example(6, 32, seed=4, scaled=scaled)
    np.testing.assert_allclose(ex.scores, ex.Q @ ex.K.T / (np.sqrt(32) if scaled else 1.0), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(softmax(ex.scores), ex.weights)
    q, k, v = (torch.from_numpy(a)[None] for a in (ex.Q, ex.K, ex.V))
    expected = F.scaled_dot_product_attention(q, k, v, scale=None if scaled else 1.0)[0].numpy()
    np.testing.assert_allclose(ex.output, expected, rtol=1e-12, atol=1e-12)
    assert ex.stats.max_weight == pytest.approx(ex.weights.max(axis=-1).mean())
