"""`core.reference`: PyTorch's attention on our inputs, and the difference a page shows as its cross-check."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from core import causal_mask, scaled_dot_product_attention
from core.reference import max_abs_diff, torch_difference, torch_scaled_dot_product_attention
from core.scaling import random_qkv
from tests.helpers import lesson_values as lesson


def test_pytorch_gives_the_lessons_printed_output():
    theirs = torch_scaled_dot_product_attention(lesson.Q, lesson.K, lesson.V)
    assert theirs.dtype == np.float32
    np.testing.assert_array_equal(np.round(theirs.astype(np.float64), 3), lesson.OUTPUT)


def test_on_the_lessons_example_ours_and_pytorchs_differ_by_float32_rounding_only():
    ours, _ = scaled_dot_product_attention(lesson.Q, lesson.K, lesson.V)
    assert 0 < torch_difference(ours, lesson.Q, lesson.K, lesson.V) < 1e-6  # float32 against our float64
    assert torch_difference(ours, lesson.Q, lesson.K, lesson.V, dtype=np.float64) < 1e-15
    # The lesson prints three decimals: its output is PyTorch's to within half a unit of the last one.
    assert torch_difference(lesson.OUTPUT, lesson.Q, lesson.K, lesson.V) <= 5e-4 + 1e-7


def test_the_difference_catches_a_mistake_and_scale_one_turns_the_scaling_off():
    q, k, v = random_qkv(6, 64, seed=1)
    unscaled, _ = scaled_dot_product_attention(q, k, v, scale=1.0)
    assert torch_difference(unscaled, q, k, v) > 0.1  # ours forgot the √d_k, PyTorch did not
    assert torch_difference(unscaled, q, k, v, scale=1.0, dtype=np.float64) < 1e-12


def test_our_causal_mask_is_pytorchs_by_flag_and_as_a_mask():
    q, k, v = random_qkv(7, 8, seed=2)
    masked, _ = scaled_dot_product_attention(q, k, v, mask=causal_mask(7))
    assert torch_difference(masked, q, k, v, is_causal=True, dtype=np.float64) < 1e-12
    assert torch_difference(masked, q, k, v, causal_mask(7), dtype=np.float64) < 1e-12
    assert torch_difference(masked, q, k, v) > 1e-2  # PyTorch without a mask sees the future


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_output_is_pytorchs_own_in_the_precision_asked_for(dtype):
    q, k, v = random_qkv(5, 16, seed=3)
    theirs = torch_scaled_dot_product_attention(q, k, v, dtype=dtype)
    assert theirs.dtype == dtype
    direct = F.scaled_dot_product_attention(*(torch.from_numpy(a.astype(dtype)) for a in (q, k, v))).numpy()
    np.testing.assert_array_equal(theirs, direct)


def test_batched_inputs_and_the_difference_is_the_largest_over_all_entries():
    q, k, v = (np.stack([a, 2 * a]) for a in random_qkv(4, 8, seed=4))  # (2, 4, 8): a batch of two
    ours, _ = scaled_dot_product_attention(q, k, v)
    wrong = ours.copy()
    wrong[1, 2, 3] += 0.25
    assert torch_difference(wrong, q, k, v, dtype=np.float64) == pytest.approx(0.25, abs=1e-12)
    assert max_abs_diff(wrong, ours) == pytest.approx(0.25)


def test_bad_input_names_the_argument():
    q, k, v = random_qkv(3, 4, seed=0)
    with pytest.raises(ValueError, match="k contains 1 NaN"):
        torch_difference(q, q, np.where(k == k[0, 0], np.nan, k), v)
    with pytest.raises(ValueError, match="q must have at least 2 dimensions"):
        torch_scaled_dot_product_attention(q[0], k, v)
