"""`core.deep_stack`: the stack's block is PyTorch's layer, its gradients are the finite differences', and its
measurements are what they say they are."""

import itertools

import numpy as np
import pytest
import torch

from core.block_reference import torch_encoder_layer
from core.deep_stack import (
    WEIGHT_NAMES,
    StackConfig,
    blocks_of,
    depth_sweep,
    stack_block,
    stack_loss,
    stack_states,
    stack_weights,
)
from core.transformer_block import ACTIVATIONS, PLACEMENTS, BlockWeights, block_input


def as_block_weights(block: dict[str, torch.Tensor], d_model: int, d_ff: int) -> BlockWeights:
    """A stack block as `core.transformer_block`'s weights: zero biases, γ = 1, β = 0."""
    mats = {name: t.detach().numpy() for name, t in block.items()}
    return BlockWeights(**mats, b_1=np.zeros(d_ff), b_2=np.zeros(d_model), gamma_1=np.ones(d_model),
                        beta_1=np.zeros(d_model), gamma_2=np.ones(d_model), beta_2=np.zeros(d_model))


@pytest.mark.parametrize("activation, placement", itertools.product(ACTIVATIONS, PLACEMENTS))
def test_a_stack_block_with_residual_and_norm_is_torchs_encoder_layer(activation, placement):
    config = StackConfig(depth=2, n_heads=2, d_ff=32, activation=activation, placement=placement, seed=3)
    x = block_input(8)
    weights = stack_weights(config, 8)
    states = stack_states(x, weights, config)
    for b, block in enumerate(blocks_of(weights)):
        layer = torch_encoder_layer(as_block_weights(block, 8, 32), 2, activation=activation, placement=placement)
        with torch.no_grad():
            theirs = layer(states[b].detach().unsqueeze(0))[0]  # (1, T, d) -> (T, d)
        np.testing.assert_allclose(states[b + 1].detach().numpy(), theirs.numpy(), rtol=0, atol=1e-12)


def test_switching_the_residual_and_the_norm_off_changes_the_block_as_written():
    config = StackConfig(depth=1, n_heads=1, d_ff=16, residual=False, norm=False)
    x = torch.tensor(block_input(4))
    (block,) = blocks_of(stack_weights(config, 4))
    plain = stack_block(x, block, config)
    attn = torch.softmax((x @ block["W_q"]) @ (x @ block["W_k"]).T / 2.0, dim=-1) @ (x @ block["W_v"]) @ block["W_o"]
    want = torch.relu(attn @ block["W_1"]) @ block["W_2"]  # FFN(MHA(x)): nothing added, nothing normalised
    np.testing.assert_allclose(plain.detach().numpy(), want.detach().numpy(), atol=1e-12)


@pytest.mark.parametrize("residual, norm, placement", [(True, True, "post"), (False, True, "pre"),
                                                       (False, False, "post"), (True, False, "pre")])
def test_the_gradient_at_the_first_block_is_the_finite_differences(residual, norm, placement):
    """Central differences of L over every entry of block 1's six matrices, against the sweep's autograd norm."""
    config = StackConfig(depth=3, n_heads=2, d_ff=8, activation="gelu", placement=placement, residual=residual,
                         norm=norm, seed=1)
    x, h = block_input(4), 1e-6
    weights = {name: w.detach().clone() for name, w in stack_weights(config, 4).items()}
    squares = 0.0
    for name in WEIGHT_NAMES:
        for index in itertools.product(*(range(n) for n in weights[name].shape[1:])):
            at = (0, *index)  # block 1's entry
            saved = float(weights[name][at])
            weights[name][at] = saved + h
            up = float(stack_loss(x, weights, config))
            weights[name][at] = saved - h
            down = float(stack_loss(x, weights, config))
            weights[name][at] = saved
            squares += ((up - down) / (2 * h)) ** 2
    sweep = depth_sweep(x, config)
    np.testing.assert_allclose(sweep.first_block_gradient, np.sqrt(squares), rtol=1e-6)


def test_the_sweeps_measurements_are_what_they_say():
    config = StackConfig(depth=5, n_heads=2, d_ff=32, placement="pre", seed=2)
    x = block_input(8)
    sweep = depth_sweep(x, config)
    states = np.stack([s.detach().numpy() for s in stack_states(x, stack_weights(config, 8), config)])  # (6, T, d)
    np.testing.assert_allclose(sweep.stream, np.linalg.norm(states, axis=-1).mean(axis=-1), rtol=1e-12)
    np.testing.assert_allclose(sweep.update, np.linalg.norm(np.diff(states, axis=0), axis=-1).mean(axis=-1),
                               rtol=1e-12)
    unit = states / np.linalg.norm(states, axis=-1, keepdims=True)
    np.testing.assert_allclose(sweep.self_cosine, (unit * unit[:1]).sum(-1), atol=1e-12)
    pairs = [(unit[:, a] * unit[:, b]).sum(-1) for a, b in itertools.combinations(range(3), 2)]
    np.testing.assert_allclose(sweep.token_cosine, np.mean(pairs, axis=0), atol=1e-12)
    np.testing.assert_allclose(sweep.self_cosine[0], 1.0)
    assert sweep.grad_norm.shape == (5,) and not sweep.grad_norm.flags.writeable


def test_a_blocks_weights_do_not_depend_on_the_depth_above_it():
    short, tall = (stack_weights(StackConfig(depth=d, n_heads=1, d_ff=16, seed=4), 4) for d in (2, 12))
    for name in WEIGHT_NAMES:
        np.testing.assert_array_equal(short[name].detach().numpy(), tall[name][:2].detach().numpy())


@pytest.mark.parametrize("placement", PLACEMENTS)
@pytest.mark.parametrize("d_model, n_heads, d_ff", [(4, 1, 16), (16, 4, 64)])
def test_without_the_residual_the_gradient_at_block_1_of_24_vanishes(placement, d_model, n_heads, d_ff):
    """What the page shows at its extremes: 24 blocks without the residual and without the norm collapse the signal
    and the gradient; with both, block 1 gets a gradient of the same order as the top block's."""
    x = block_input(d_model)
    on = depth_sweep(x, StackConfig(24, n_heads, d_ff, placement=placement))
    off = depth_sweep(x, StackConfig(24, n_heads, d_ff, placement=placement, residual=False, norm=False))
    assert off.stream[-1] < 1e-2 * off.stream[0]
    assert off.first_block_gradient < 1e-2 * on.first_block_gradient
    assert on.first_block_gradient > 1e-2 * on.grad_norm[-1]


def test_at_the_pages_defaults_switching_the_residual_off_makes_the_gradient_at_block_1_vanish():
    """The lesson's width (d_model 4, one head, d_ff 16), post-LN, 24 blocks, norm on: only the residual changes."""
    x = block_input(4)
    on, off = (depth_sweep(x, StackConfig(24, 1, 16, residual=r)) for r in (True, False))
    assert off.first_block_gradient < 1e-3 * on.first_block_gradient
    assert off.first_block_gradient < 1e-3 * off.grad_norm[-1]  # it fades on its way down the stack


def test_bad_configs_raise_clear_errors():
    with pytest.raises(ValueError, match="depth must be 1 to 48 blocks"):
        StackConfig(depth=0, n_heads=1, d_ff=4)
    with pytest.raises(ValueError, match="placement one of"):
        StackConfig(depth=2, n_heads=1, d_ff=4, placement="side")
    with pytest.raises(ValueError, match="d_model=6 is not divisible by n_heads=4"):
        stack_weights(StackConfig(depth=2, n_heads=4, d_ff=4), 6)
