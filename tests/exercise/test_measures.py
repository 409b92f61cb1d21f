"""`exercise.measures`: reading off a student's numbers how they were computed."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from exercise.cases import exercise_cases
from exercise.measures import (
    added_mask_weights,
    attention_with_factor,
    causal_attention,
    d_k_power,
    named_number,
    normalised_axes,
    recovered_scale,
    scale_after_softmax,
    sequence_first_attention,
    transposed_products,
)

CASES = {c.name: c for c in exercise_cases()}
RANDOM = CASES["random"]


@pytest.mark.parametrize("divisor", [1.0, math.sqrt(3), 4.0, 8.0, 16.0, 0.25])
@pytest.mark.parametrize("with_weights", [True, False])
def test_the_scale_is_recovered_from_weights_or_from_the_output_alone(divisor, with_weights):
    output, weights = (a.astype(np.float32).astype(np.float64) for a in attention_with_factor(RANDOM, 1 / divisor))
    factor = recovered_scale(RANDOM, output, weights if with_weights else None)
    assert factor is not None and 1 / factor == pytest.approx(divisor, rel=1e-3)


def test_no_scale_is_claimed_when_the_mistake_is_elsewhere():
    output, weights = attention_with_factor(RANDOM, 0.25)
    assert recovered_scale(RANDOM, output[:, ::-1], weights) is None  # rows in the wrong order
    assert recovered_scale(RANDOM, output * 2, None) is None


def test_named_numbers():
    assert named_number(math.sqrt(3)) == "1.73 (= √3)"
    assert named_number(8.0) == "8" and named_number(4.0) == "4" and named_number(2.5) == "2.5"
    assert named_number(1.0005e6) == "1e6"  # a square root of a number this large names nothing


def test_the_axes_the_weights_are_normalised_over():
    _, weights = attention_with_factor(RANDOM, 0.25)  # (2, 5, 5)
    assert normalised_axes(weights) == [-1]
    assert normalised_axes(np.swapaxes(weights, -1, -2)) == [-2]
    assert normalised_axes(np.full((2, 3, 3), 0.5)) == [-3]


def test_sequence_first_attention_is_pytorchs_on_the_transposed_tensors():
    q, k, v = (torch.from_numpy(a.astype(np.float64)).transpose(0, 1) for a in (RANDOM.Q, RANDOM.K, RANDOM.V))
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(16), dim=-1)  # (5, 2, 2)
    output, got_weights = sequence_first_attention(RANDOM)
    np.testing.assert_allclose(got_weights, weights.numpy(), rtol=1e-12)
    np.testing.assert_allclose(output, (weights @ v).transpose(0, 1).numpy(), rtol=1e-12)


def test_an_added_mask_is_a_bias_of_one_on_the_allowed_scores():
    case = CASES["worked_causal"]
    q, k = (torch.from_numpy(a.astype(np.float64)) for a in (case.Q, case.K))
    expected = torch.softmax(q @ k.T / 2 + torch.from_numpy(case.mask.astype(np.float64)), dim=-1)
    np.testing.assert_allclose(added_mask_weights(case), expected.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["random", "worked_causal"])
@pytest.mark.parametrize("power", [-1.0, -0.5, 0.5, 1.0])
def test_a_scale_after_the_softmax_is_read_off_as_a_power_of_d_k(name, power):
    case = CASES[name]
    q, k, v = (torch.from_numpy(a) for a in (case.Q, case.K, case.V))
    scores = q @ k.transpose(-2, -1)  # unscaled: (..., T, d_k) @ (..., d_k, T) -> (..., T, T)
    if case.mask is not None:
        scores = scores.masked_fill(torch.from_numpy(case.mask) == 0, float("-inf"))
    weights = torch.softmax(scores, dim=-1) * q.size(-1) ** power
    output = (weights @ v).numpy().astype(np.float64)  # (..., T, T) @ (..., T, d_v)
    assert scale_after_softmax(case, output, weights.numpy().astype(np.float64)) == power
    assert scale_after_softmax(case, output, None) == power
    assert d_k_power(float(weights.sum(-1).flatten()[0]), q.size(-1)) == power


def test_no_scale_after_the_softmax_is_claimed_for_right_or_otherwise_wrong_weights():
    output, weights = attention_with_factor(RANDOM, 1 / 4)
    assert scale_after_softmax(RANDOM, output, weights) is None
    assert scale_after_softmax(RANDOM, output * 0.3, weights * 0.3) is None
    assert d_k_power(0.3, 16) is None and d_k_power(1.0, 16) is None


def test_the_wrong_way_products_and_causal_attention_are_pytorchs():
    probe = CASES["probe"]  # (4, 4, 4): V @ weights runs only where d_v == T
    q, k, v = (torch.from_numpy(a).double() for a in (probe.Q, probe.K, probe.V))
    weights = torch.softmax(q @ k.transpose(-2, -1) / 2.0, dim=-1)  # √d_k = 2
    products = transposed_products(probe)
    for written, expected in (("weights.transpose(-2, -1) @ V", weights.transpose(-2, -1) @ v),
                              ("V @ weights", v @ weights), ("V.transpose(-2, -1) @ weights", v.mT @ weights)):
        np.testing.assert_allclose(products[written], expected.numpy(), atol=1e-12)
    assert "V @ weights" not in transposed_products(RANDOM)  # (2, 5, 16) @ (2, 5, 5) cannot be multiplied
    causal_out = torch.nn.functional.scaled_dot_product_attention(
        *(torch.from_numpy(a).double() for a in (RANDOM.Q, RANDOM.K, RANDOM.V)), is_causal=True)
    np.testing.assert_allclose(causal_attention(RANDOM)[0], causal_out.numpy(), atol=1e-12)
