"""training.model: the attention module against core and PyTorch, shapes, positions, seeding."""

import concurrent.futures
import dataclasses
import sys

import numpy as np
import pytest
import torch

from core.multihead import multi_head_attention
from core.positional import positional_encoding
from tests.training.tiny import TINY
from training.config import TrainConfig
from training.model import MultiHeadSelfAttention, build_model, parameter_count


def test_attention_module_is_core_multi_head_attention():
    """The PyTorch module computes exactly `core.multi_head_attention` (NumPy, float64), weights included."""
    torch.manual_seed(3)
    attn = MultiHeadSelfAttention(d_model=8, n_heads=2).double()
    x = torch.randn(3, 5, 8, dtype=torch.float64)  # (B, T, d_model)
    out, weights = attn(x)
    # nn.Linear computes x @ W.T, so core's row-vector matrices are the transposed weights.
    w = [m.weight.detach().numpy().T for m in (attn.W_q, attn.W_k, attn.W_v, attn.W_o)]
    ref_out, ref_weights = multi_head_attention(x.numpy(), *w, n_heads=2)
    np.testing.assert_allclose(out.detach().numpy(), ref_out, atol=1e-12)
    np.testing.assert_allclose(weights.detach().numpy(), ref_weights, atol=1e-12)
    assert weights.shape == (3, 2, 5, 5)  # (B, H, T, T)


def test_attention_module_matches_torch_sdpa():
    torch.manual_seed(4)
    attn = MultiHeadSelfAttention(d_model=12, n_heads=3)
    x = torch.randn(2, 6, 12)
    out, _ = attn(x)
    q, k, v = (m(x).view(2, 6, 3, 4).transpose(1, 2) for m in (attn.W_q, attn.W_k, attn.W_v))  # (B, H, T, d_k)
    heads = torch.nn.functional.scaled_dot_product_attention(q, k, v)  # (B, H, T, d_k)
    ref = attn.W_o(heads.transpose(1, 2).reshape(2, 6, 12))
    torch.testing.assert_close(out, ref, atol=1e-6, rtol=1e-5)



@pytest.mark.parametrize("mask", [None, torch.ones(6, 6, dtype=torch.bool).tril()], ids=["unmasked", "causal"])
def test_without_weights_the_module_is_the_same_attention_and_keeps_none(mask):
    """``need_weights=False`` (training, scoring) computes the explicit formula's output, and returns no weights."""
    torch.manual_seed(5)
    attn = MultiHeadSelfAttention(d_model=12, n_heads=3)
    x = torch.randn(2, 6, 12)
    explicit, weights = attn(x, mask)
    fused, none = attn(x, mask, need_weights=False, is_causal=mask is not None)
    masked_only, _ = attn(x, mask, need_weights=False)  # the mask itself, without the hint that it is causal
    assert none is None and weights.shape == (2, 3, 6, 6)
    torch.testing.assert_close(fused, explicit, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(masked_only, explicit, atol=1e-6, rtol=1e-5)

@pytest.mark.parametrize("n_layers", [1, 2])
def test_model_shapes_and_attention_rows(n_layers):
    config = TrainConfig(seq_len=6, vocab=7, d_model=16, n_heads=4, n_layers=n_layers)
    model = build_model(config)
    logits, maps = model(torch.randint(0, 7, (3, 6)))
    assert logits.shape == (3, 6, 7)  # (B, T, vocab)
    assert maps.shape == (3, n_layers, 4, 6, 6)  # (B, L, H, T, T)
    torch.testing.assert_close(maps.sum(-1), torch.ones(3, n_layers, 4, 6))


def test_positional_encodings():
    sinusoidal = build_model(TrainConfig(seq_len=6, d_model=16, pos="sinusoidal"))
    np.testing.assert_allclose(sinusoidal.P.numpy(), positional_encoding(6, 16), atol=1e-7)
    assert not any(p is sinusoidal.P for p in sinusoidal.parameters())  # fixed, not learned
    learned = build_model(TrainConfig(seq_len=6, d_model=16, pos="learned"))
    assert any(p is learned.P for p in learned.parameters()) and learned.P.shape == (6, 16)
    none = build_model(TrainConfig(seq_len=6, d_model=16, pos="none"))
    assert torch.count_nonzero(none.P) == 0
    assert parameter_count(learned) == parameter_count(sinusoidal) + 6 * 16


def test_without_positions_the_model_cannot_tell_order():
    """pos="none": permuting the input just permutes the outputs, so reverse is out of reach."""
    x = torch.tensor([[3, 1, 4, 1, 5, 9]])
    perm = torch.tensor([5, 2, 0, 1, 4, 3])
    for pos, equivariant in (("none", True), ("sinusoidal", False)):
        model = build_model(TrainConfig(seq_len=6, d_model=16, pos=pos))
        with torch.no_grad():
            out, _ = model(x)
            out_perm, _ = model(x[:, perm])
        assert torch.allclose(out[:, perm], out_perm, atol=1e-5) == equivariant


def test_build_model_is_seeded_and_leaves_the_global_rng_alone():
    state = torch.get_rng_state()
    a, b = build_model(TINY), build_model(TINY)
    assert torch.equal(torch.get_rng_state(), state)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    c = build_model(TrainConfig(**{**TINY.__dict__, "seed": 5}))
    assert not torch.equal(a.blocks[0].attn.W_q.weight, c.blocks[0].attn.W_q.weight)


def test_models_built_in_many_threads_at_once_each_get_their_own_seed():
    """Sessions build models in their own threads; a thread switch between one build's seeding and its drawing
    must not hand it another seed's weights (or another build's leftovers of the generator)."""
    configs = [dataclasses.replace(TINY, seed=seed) for seed in range(4)]
    expected = {c.seed: torch.cat([p.detach().flatten() for p in build_model(c).parameters()]) for c in configs}

    def weights(config: TrainConfig) -> tuple[int, torch.Tensor]:
        return config.seed, torch.cat([p.detach().flatten() for p in build_model(config).parameters()])

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as Python can, so an unguarded build is interleaved
    try:
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            built = list(pool.map(weights, configs * 8))
    finally:
        sys.setswitchinterval(interval)
    assert all(torch.equal(w, expected[seed]) for seed, w in built)


def test_the_architecture_is_what_shapes_the_model():
    base = TrainConfig(seq_len=6, vocab=7, d_model=16, n_heads=4)
    same_shape = dataclasses.replace(base, seed=3, lr=1e-2, steps=50, task="sort")
    assert same_shape.architecture == base.architecture
    assert parameter_count(build_model(same_shape)) == parameter_count(build_model(base))
    for change in ({"d_model": 32}, {"n_layers": 2}, {"pos": "learned"}, {"vocab": 9}):
        other = dataclasses.replace(base, **change)
        assert other.architecture != base.architecture
        assert parameter_count(build_model(other)) != parameter_count(build_model(base))
