"""`softmax`, `causal_mask` and `scaled_dot_product_attention`: parity with PyTorch and error messages."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from core import causal_mask, scaled_dot_product_attention, softmax


def torch_sdpa(q, k, v, mask=None):
    t = [torch.from_numpy(a) for a in (q, k, v)]  # float64 on both sides
    m = None if mask is None else torch.from_numpy(np.ascontiguousarray(mask))
    return F.scaled_dot_product_attention(*t, attn_mask=m).numpy()


@pytest.mark.parametrize(
    "q_shape, k_shape, v_shape",
    [
        ((3, 4), (3, 4), (3, 4)),
        ((5, 16), (7, 16), (7, 8)),  # cross-attention: T_q != T_k, d_v != d_k
        ((2, 5, 16), (2, 5, 16), (2, 5, 16)),
        ((2, 4, 6, 8), (2, 4, 9, 8), (2, 4, 9, 3)),  # (B, H, T, d_k)
        ((2, 1, 6, 8), (1, 3, 6, 8), (1, 3, 6, 8)),  # broadcasting batch dims
    ],
)
def test_matches_pytorch(q_shape, k_shape, v_shape):
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=s) for s in (q_shape, k_shape, v_shape))
    out, w = scaled_dot_product_attention(q, k, v)
    expected = torch_sdpa(q, k, v)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out, expected, atol=1e-12)
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-12)


@pytest.mark.parametrize("mask_kind", ["causal", "random", "per_batch"])
def test_boolean_masks_match_pytorch(mask_kind):
    rng = np.random.default_rng(1)
    q, k, v = (rng.normal(size=(2, 3, 6, 4)) for _ in range(3))
    if mask_kind == "causal":
        mask = causal_mask(6)
    elif mask_kind == "random":
        mask = rng.random((6, 6)) < 0.5
        mask[:, 0] = True  # every query keeps at least one key
    else:
        mask = rng.random((2, 1, 6, 6)) < 0.6
        mask[..., 2] = True
    out, w = scaled_dot_product_attention(q, k, v, mask=mask)
    np.testing.assert_allclose(out, torch_sdpa(q, k, v, mask), atol=1e-12)
    assert np.all(w[~np.broadcast_to(mask, w.shape)] == 0.0)  # exactly zero, not just small


def test_causal_mask():
    np.testing.assert_array_equal(causal_mask(3), [[1, 0, 0], [1, 1, 0], [1, 1, 1]])
    assert causal_mask(4).dtype == bool
    torch_causal = torch.ones(5, 5, dtype=torch.bool).tril().numpy()
    np.testing.assert_array_equal(causal_mask(5), torch_causal)


def test_custom_scale():
    rng = np.random.default_rng(2)
    q, k, v = (rng.normal(size=(4, 8)) for _ in range(3))
    _, w = scaled_dot_product_attention(q, k, v, scale=1.0)
    np.testing.assert_allclose(w, softmax(q @ k.T), atol=1e-12)
    ref = F.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (q, k, v)), scale=0.3).numpy()
    np.testing.assert_allclose(scaled_dot_product_attention(q, k, v, scale=0.3)[0], ref, atol=1e-12)


def test_softmax_is_stable_and_matches_torch():
    x = np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1000.0, -1000.0]])
    np.testing.assert_allclose(softmax(x), torch.softmax(torch.from_numpy(x), -1).numpy(), atol=1e-15)
    y = np.random.default_rng(3).normal(size=(2, 3, 4))
    np.testing.assert_allclose(softmax(y, axis=1), torch.softmax(torch.from_numpy(y), 1).numpy(), atol=1e-15)
    np.testing.assert_array_equal(softmax(np.array([0.0, -np.inf])), [1.0, 0.0])


def test_softmax_rejects_bad_input():
    with pytest.raises(ValueError, match="NaN or \\+inf"):
        softmax(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="entirely -inf"):
        softmax(np.array([[0.0, 1.0], [-np.inf, -np.inf]]))
    with pytest.raises(ValueError, match="empty"):
        softmax(np.array([]))


ERROR_CASES = {
    "inner dims": (dict(q=np.ones((3, 4)), k=np.ones((3, 5)), v=np.ones((3, 4))),
                   r"same last dimension d_k.*\(3, 4\).*\(3, 5\)"),
    "T_k differs": (dict(q=np.ones((3, 4)), k=np.ones((3, 4)), v=np.ones((2, 4))),
                    r"same number of positions T_k.*\(3, 4\).*\(2, 4\)"),
    "batch": (dict(q=np.ones((2, 3, 4)), k=np.ones((3, 3, 4)), v=np.ones((3, 3, 4))),
              r"leading \(batch\) dimensions.*\(2, 3, 4\).*\(3, 3, 4\)"),
    "mask shape": (dict(q=np.ones((3, 4)), k=np.ones((5, 4)), v=np.ones((5, 4)), mask=np.ones((3, 3), bool)),
                   r"mask of shape \(3, 3\) does not broadcast.*\(3, 5\)"),
    "mask adds dims": (dict(q=np.ones((3, 4)), k=np.ones((3, 4)), v=np.ones((3, 4)), mask=np.ones((2, 3, 3), bool)),
                       r"mask of shape \(2, 3, 3\) does not broadcast"),
    "empty row": (dict(q=np.ones((2, 4)), k=np.ones((2, 4)), v=np.ones((2, 4)),
                       mask=np.array([[True, False], [False, False]])), r"query row \(1,\) attend to no key"),
    "mask dtype": (dict(q=np.ones((2, 4)), k=np.ones((2, 4)), v=np.ones((2, 4)), mask=np.ones((2, 2))),
                   r"mask must be boolean.*float64"),
    "nan": (dict(q=np.array([[np.nan, 1.0]]), k=np.ones((1, 2)), v=np.ones((1, 2))), r"q contains 1 NaN"),
    "inf": (dict(q=np.ones((1, 2)), k=np.ones((1, 2)), v=np.array([[np.inf, 1.0]])), r"v contains 1 NaN or infinite"),
    "empty": (dict(q=np.ones((0, 4)), k=np.ones((3, 4)), v=np.ones((3, 4))), r"q is empty \(shape \(0, 4\)\)"),
    "1-D": (dict(q=np.ones(4), k=np.ones((3, 4)), v=np.ones((3, 4))), r"q must have at least 2 dimensions"),
    "text": (dict(q=[["a", "b"]], k=np.ones((3, 2)), v=np.ones((3, 2))), r"q must be numeric"),
    "overflow": (dict(q=np.full((2, 2), 1e200), k=np.full((2, 2), 1e200), v=np.ones((2, 2))), r"overflowed"),
    "scale": (dict(q=np.ones((2, 2)), k=np.ones((2, 2)), v=np.ones((2, 2)), scale=np.nan),
              r"scale must be a finite number"),
}


@pytest.mark.parametrize("case", ERROR_CASES)
def test_bad_input_raises_a_helpful_value_error(case):
    kwargs, message = ERROR_CASES[case]
    with pytest.raises(ValueError, match=message):
        scaled_dot_product_attention(**kwargs)


@pytest.mark.parametrize("n", [0, -1, 2.5, True])
def test_causal_mask_rejects_non_positive_sizes(n):
    with pytest.raises(ValueError, match="positive integer"):
        causal_mask(n)
