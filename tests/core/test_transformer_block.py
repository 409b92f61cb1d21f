"""`core.transformer_block`: the block against PyTorch's own layer, LayerNorm's rows, the FFN per position, the
residual's identity, the weight counts, and the lesson's numbers where the block starts."""

import itertools
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from core import worked_example
from core.block_reference import (
    empty_encoder_layer,
    load_block_weights,
    torch_block_output,
    torch_block_outputs,
    torch_encoder_layer,
)
from core.transformer_block import (
    ACTIVATIONS,
    GPT2_SMALL,
    PLACEMENTS,
    BlockWeights,
    block_input,
    block_weights,
    feed_forward,
    ffn_permutation_check,
    gelu,
    layer_norm,
    lesson_block,
    transformer_block,
    weight_counts,
)
from tests.helpers import lesson_values as lesson

SIZES = [(4, 1, 16), (4, 2, 8), (8, 2, 32), (16, 4, 64), (12, 3, 24)]  # (d_model, n_heads, d_ff)


@pytest.mark.parametrize("activation, placement, causal", itertools.product(ACTIVATIONS, PLACEMENTS, (False, True)))
@pytest.mark.parametrize("d_model, n_heads, d_ff", SIZES)
def test_the_block_is_torchs_transformer_encoder_layer_given_the_same_weights(activation, placement, causal,
                                                                               d_model, n_heads, d_ff):
    x, weights = block_input(d_model), block_weights(7, d_model, d_ff)
    ours = transformer_block(x, weights, n_heads, activation=activation, placement=placement, causal=causal)
    theirs = torch_block_output(x, weights, n_heads, activation=activation, placement=placement, causal=causal)
    assert np.max(np.abs(ours.output - theirs)) <= 1e-6  # float64 both sides: about 1e-15 in fact
    np.testing.assert_allclose(ours.output, theirs, rtol=0, atol=1e-12)


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_one_batch_of_masks_is_each_mask_run_alone(placement):
    """The page's cross-check runs X unmasked and masked as one batch: each copy gets its own mask, every head."""
    x, weights = block_input(12), block_weights(5, 12, 48)
    both = torch_block_outputs(x, weights, 3, placement=placement, causal=(False, True))
    for alone, causal in zip(both, (False, True), strict=True):
        np.testing.assert_allclose(alone, torch_block_output(x, weights, 3, placement=placement, causal=causal),
                                   rtol=0, atol=1e-13)
        ours = transformer_block(x, weights, 3, placement=placement, causal=causal).output
        np.testing.assert_allclose(alone, ours, rtol=0, atol=1e-12)
    assert np.abs(both[0][0] - both[1][0]).max() > 1e-3  # the first token, alone under the mask, differs


def test_attentions_and_the_first_norms_weights_do_not_depend_on_d_ff():
    """They are drawn before the FFN's: a step of d_ff leaves the block's first half as it was."""
    first, other = block_weights(4, 8, 8), block_weights(4, 8, 64)
    for name in ("W_q", "W_k", "W_v", "W_o", "gamma_1", "beta_1"):
        np.testing.assert_array_equal(getattr(first, name), getattr(other, name))
    assert not np.array_equal(first.gamma_2, other.gamma_2)  # the rest follows the FFN's draws


def test_the_causal_mask_changes_every_row_but_the_first():
    x, weights = block_input(8), block_weights(3, 8, 32)
    plain = transformer_block(x, weights, 2).output
    masked = transformer_block(x, weights, 2, causal=True)
    np.testing.assert_array_equal(np.triu(masked.attention.weights[0], 1), 0)  # no weight on a later token
    np.testing.assert_allclose(masked.output[-1], plain[-1], atol=1e-12)  # the last token sees everything anyway
    assert np.abs(masked.output[1] - plain[1]).max() > 1e-3


def test_one_layer_reloaded_gives_each_settings_own_block():
    """A layer lent from setting to setting (the page keeps one per shape) holds only the last weights given."""
    layer = empty_encoder_layer(8, 2, 32, activation="gelu", placement="pre")
    x = block_input(8)
    for seed in (1, 2, 1):
        weights = block_weights(seed, 8, 32)
        reused = torch_block_outputs(x, weights, 2, activation="gelu", placement="pre", layer=layer)
        fresh = torch_block_outputs(x, weights, 2, activation="gelu", placement="pre")
        for a, b in zip(reused, fresh, strict=True):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(layer.linear2.weight.detach().numpy(), weights.W_2.T)
    with pytest.raises(ValueError, match="cannot hold weights of d_model 4 and d_ff 16"):
        load_block_weights(layer, block_weights(0, 4, 16))


def test_an_empty_layer_draws_nothing_from_torchs_random_generator():
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    empty_encoder_layer(16, 4, 64)
    assert torch.equal(torch.rand(3), expected)


def test_an_empty_layer_has_no_values_until_it_is_given_weights_and_then_holds_them():
    """Built on the meta device (shapes only); the first weights become its parameters, later ones are copied in."""
    layer = empty_encoder_layer(8, 2, 32, placement="pre")
    assert all(p.is_meta for p in layer.parameters())
    x = block_input(8)
    for seed in (1, 2):
        weights = block_weights(seed, 8, 32)
        (ours,) = torch_block_outputs(x, weights, 2, placement="pre", causal=(False,), layer=layer)
        assert not any(p.is_meta for p in layer.parameters())
        assert all(p.dtype == torch.float64 for p in layer.parameters())
        np.testing.assert_allclose(ours, transformer_block(x, weights, 2, placement="pre").output, rtol=0, atol=1e-12)


def test_the_torch_layer_holds_our_weights_transposed():
    weights = block_weights(0, 4, 16)
    layer = torch_encoder_layer(weights, 1, placement="pre")
    assert layer.norm_first and layer.linear1.weight.shape == (16, 4)
    np.testing.assert_array_equal(layer.linear1.weight.detach().numpy(), weights.W_1.T)
    np.testing.assert_array_equal(layer.self_attn.out_proj.weight.detach().numpy(), weights.W_o.T)
    np.testing.assert_array_equal(layer.norm2.bias.detach().numpy(), weights.beta_2)


@pytest.mark.parametrize("seed", [0, 5, 42])
def test_layer_norm_rows_have_mean_0_and_variance_1_before_gamma_and_beta(seed):
    x = np.random.default_rng(seed).normal(3.0, 2.0, size=(5, 16))
    ln = layer_norm(x, gamma=np.full(16, 2.0), beta=np.full(16, -1.0), eps=0.0)
    np.testing.assert_allclose(ln.normalised.mean(axis=1), 0.0, atol=1e-9)
    np.testing.assert_allclose(ln.normalised.var(axis=1), 1.0, atol=1e-9)
    np.testing.assert_allclose(ln.mean, x.mean(axis=1), atol=1e-12)
    np.testing.assert_allclose(ln.var, x.var(axis=1), atol=1e-12)
    np.testing.assert_allclose(ln.output, 2.0 * ln.normalised - 1.0, atol=1e-12)
    with_eps = layer_norm(x, np.ones(16), np.zeros(16), eps=1e-5)  # ε leaves each row's variance σ²/(σ² + ε)
    np.testing.assert_allclose(with_eps.normalised.var(axis=1), x.var(axis=1) / (x.var(axis=1) + 1e-5), atol=1e-12)
    torch_ln = F.layer_norm(torch.tensor(x), (16,), torch.full((16,), 2.0, dtype=torch.float64),
                            torch.full((16,), -1.0, dtype=torch.float64), eps=1e-5)
    np.testing.assert_allclose(layer_norm(x, np.full(16, 2.0), np.full(16, -1.0)).output, torch_ln.numpy(),
                               atol=1e-12)


def test_gelu_is_pytorchs_exact_gelu():
    x = np.linspace(-6, 6, 241)
    np.testing.assert_allclose(gelu(x), F.gelu(torch.tensor(x)).numpy(), rtol=0, atol=1e-15)
    assert not np.allclose(gelu(x), F.gelu(torch.tensor(x), approximate="tanh").numpy(), rtol=0, atol=1e-6)


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_the_ffn_commutes_with_every_permutation_of_the_positions(activation):
    rng = np.random.default_rng(1)
    x, weights = rng.normal(size=(4, 8)), block_weights(2, 8, 32)
    for perm in itertools.permutations(range(4)):
        check = ffn_permutation_check(x, weights, perm, activation)
        assert check.max_difference == 0.0  # exactly: each row gets the same arithmetic wherever it stands
        np.testing.assert_array_equal(check.of_shuffled, check.shuffled_output)
    with pytest.raises(ValueError, match="perm must be a permutation of 0..3"):
        ffn_permutation_check(x, weights, (0, 0, 1, 2))


def test_the_ffn_reads_nothing_of_the_other_positions():
    x, weights = block_input(4), block_weights(0, 4, 16)
    changed = np.array(x)
    changed[[0, 2]] += 5.0  # every token but "cat" moved
    np.testing.assert_array_equal(feed_forward(changed, weights, "gelu").output[1],
                                  feed_forward(x, weights, "gelu").output[1])


def zero_sub_layers(weights: BlockWeights) -> BlockWeights:
    """The same block with W_o, W_2 and b_2 zero: both sub-layers output 0."""
    kept = {k: v for k, v in vars(weights).items() if k not in ("W_o", "W_2", "b_2")}
    return BlockWeights(W_o=np.zeros_like(weights.W_o), W_2=np.zeros_like(weights.W_2),
                        b_2=np.zeros_like(weights.b_2), **kept)


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_sub_layers_that_output_zero_leave_the_residual_stream_as_it_was(activation):
    x, weights = block_input(8), zero_sub_layers(block_weights(4, 8, 32))
    pre = transformer_block(x, weights, 2, activation=activation, placement="pre")
    np.testing.assert_array_equal(pre.attention.output, 0.0)
    np.testing.assert_array_equal(pre.output, x)  # pre-LN: the identity, exactly
    post = transformer_block(x, weights, 2, activation=activation, placement="post")
    first = layer_norm(x, weights.gamma_1, weights.beta_1).output  # post-LN: the normalised input, normalised again
    np.testing.assert_allclose(post.output, layer_norm(first, weights.gamma_2, weights.beta_2).output, atol=1e-12)
    unit = BlockWeights(**{**vars(weights), **{k: np.ones(8) for k in ("gamma_1", "gamma_2")},
                           **{k: np.zeros(8) for k in ("beta_1", "beta_2")}})
    np.testing.assert_allclose(transformer_block(x, unit, 2, placement="post").output,
                               layer_norm(x, np.ones(8), np.zeros(8)).output, atol=1e-5)  # LN(LN(x)) = LN(x), to ε


def test_seed_0_starts_from_the_lessons_numbers_unchanged():
    block = lesson_block(0)  # d_model 4, one head, post-LN
    np.testing.assert_array_equal(block.input, worked_example(0).X)
    np.testing.assert_allclose(block.attention.q, lesson.Q, atol=0.05 + 1e-9)
    np.testing.assert_allclose(block.attention.k, lesson.K, atol=0.05 + 1e-9)
    np.testing.assert_allclose(block.attention.v, lesson.V, atol=0.05 + 1e-9)
    np.testing.assert_allclose(block.attention.weights[0], lesson.WEIGHTS, atol=5e-4 + 1e-9)
    np.testing.assert_allclose(block.attention.concat, lesson.OUTPUT, atol=5e-4 + 1e-9)
    np.testing.assert_array_equal(block.attention.concat, worked_example(0).output)
    np.testing.assert_array_equal(block.residual_1, block.input + block.attention.concat @ block_weights(0, 4, 16).W_o)


@pytest.mark.parametrize("d_model", [8, 16, 32])
def test_a_wider_block_keeps_the_lessons_columns_and_the_worked_examples_attention(d_model):
    x = block_input(d_model)
    np.testing.assert_array_equal(x[:, :4], worked_example(0).X)
    assert x.shape == (3, d_model) and np.array_equal(x, block_input(d_model))
    np.testing.assert_allclose(lesson_block(3, d_model).attention.concat, worked_example(3, X=x).output, atol=1e-12)


def test_weight_counts_are_computed_from_the_widths():
    page = weight_counts(4, 16)
    assert (page.attention, page.ffn) == (64, 128)
    gpt2 = weight_counts(*GPT2_SMALL)
    assert (gpt2.attention, gpt2.ffn) == (4 * 768**2, 2 * 768 * 3072) == (2_359_296, 4_718_592)
    assert math.isclose(gpt2.ffn_share, 2 / 3)
    weights = block_weights(0, 8, 24)
    counted = weight_counts(8, 24)
    assert counted.attention == sum(getattr(weights, n).size for n in ("W_q", "W_k", "W_v", "W_o"))
    assert counted.ffn == weights.W_1.size + weights.W_2.size


def test_bad_settings_raise_clear_errors():
    with pytest.raises(ValueError, match="at least the lesson's 4 dimensions"):
        block_input(2)
    with pytest.raises(ValueError, match="placement must be one of"):
        transformer_block(block_input(4), block_weights(0, 4, 16), 1, placement="middle")
    with pytest.raises(ValueError, match="activation must be one of"):
        feed_forward(block_input(4), block_weights(0, 4, 16), "tanh")
    with pytest.raises(ValueError, match=r"x must be \(tokens, d_model = 8\)"):
        transformer_block(block_input(4), block_weights(0, 8, 16), 1)
