r"""A deep stack of blocks at random initialisation: what the residual and the norm do to the signal and the gradient.

Each of the ``depth`` blocks is the block of `core.transformer_block` (without the lesson's rounding), with or
without its residual connections and its LayerNorms:

.. math::

    \text{residual on:}\ x \leftarrow x + F(\cdot),\qquad \text{off:}\ x \leftarrow F(\cdot)

and, with the norm off, LN is the identity. Weights are drawn as a fresh model's would be: normals of variance
1/fan_in, biases 0, γ = 1, β = 0. Per depth the sweep records the size of the residual stream against each
block's update, how much of each token's input direction survives (cosine similarity), how alike the tokens'
vectors become, and, by autograd through the whole stack, the gradient that reaches each block's weights from
the loss :math:`L = \sum_{t,j} R_{tj}\, y_{tj}` (R a fixed random probe, so that the gradient arriving at the
top has the same size whatever the stack outputs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from core._checks import as_float_array, positive_int
from core.transformer_block import ACTIVATIONS, LN_EPS, PLACEMENTS

MAX_DEPTH = 48
#: The weight matrices of a block whose gradient is measured (in this order).
WEIGHT_NAMES: tuple[str, ...] = ("W_q", "W_k", "W_v", "W_o", "W_1", "W_2")


@dataclass(frozen=True)
class StackConfig:
    """A stack's architecture and its switches."""

    depth: int
    n_heads: int
    d_ff: int
    activation: str = "relu"
    placement: str = "post"
    residual: bool = True
    norm: bool = True
    seed: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.depth <= MAX_DEPTH:
            raise ValueError(f"depth must be 1 to {MAX_DEPTH} blocks, got {self.depth}.")
        positive_int(self.n_heads, "n_heads")
        positive_int(self.d_ff, "d_ff")
        if self.activation not in ACTIVATIONS or self.placement not in PLACEMENTS:
            raise ValueError(f"activation must be one of {ACTIVATIONS} and placement one of {PLACEMENTS}, "
                             f"got {self.activation!r} and {self.placement!r}.")


def stack_weights(config: StackConfig, d_model: int) -> dict[str, torch.Tensor]:
    """Every block's weights by name, ``(depth, fan_in, fan_out)`` float64 tensors requiring gradients: normals
    of variance 1/fan_in, block ℓ's drawn as row ℓ of ``default_rng(seed)``'s draws (so a block's weights do not
    depend on how many blocks are stacked above it)."""
    if d_model % config.n_heads:
        raise ValueError(f"d_model={d_model} is not divisible by n_heads={config.n_heads}.")
    shapes = {"W_q": (d_model, d_model), "W_k": (d_model, d_model), "W_v": (d_model, d_model),
              "W_o": (d_model, d_model), "W_1": (d_model, config.d_ff), "W_2": (config.d_ff, d_model)}
    sizes = [math.prod(shape) for shape in shapes.values()]
    draws = np.random.default_rng(config.seed).standard_normal((config.depth, sum(sizes)))  # (depth, per block)
    ends = np.cumsum(sizes)
    weights = {}
    for (name, shape), end, size in zip(shapes.items(), ends, sizes, strict=True):
        block = draws[:, end - size:end].reshape(config.depth, *shape) / math.sqrt(shape[0])  # N(0, 1/fan_in)
        weights[name] = torch.from_numpy(block).requires_grad_()  # (depth, fan_in, fan_out)
    return weights


def blocks_of(weights: dict[str, torch.Tensor]) -> list[dict[str, torch.Tensor]]:
    """The blocks' matrices, block by block (views: one backward step per name, not one per block)."""
    per_name = {name: w.unbind(0) for name, w in weights.items()}
    return [dict(zip(per_name, mats, strict=True)) for mats in zip(*per_name.values(), strict=True)]


def _attention(x: torch.Tensor, w: dict[str, torch.Tensor], n_heads: int) -> torch.Tensor:
    """Multi-head self-attention of ``x`` ``(T, d_model)``: Concat(heads) W_o."""
    t, d_model = x.shape
    d_k = d_model // n_heads
    qkv = x @ torch.cat([w["W_q"], w["W_k"], w["W_v"]], dim=1)  # (T, d_model) @ (d_model, 3 d_model) -> (T, 3 d_model)
    q, k, v = qkv.reshape(t, 3, n_heads, d_k).permute(1, 2, 0, 3)  # -> (3, H, T, d_k), each (H, T, d_k)
    weights = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d_k), dim=-1)  # (H, T, d_k) @ (H, d_k, T) -> (H, T, T)
    heads = weights @ v  # (H, T, T) @ (H, T, d_k) -> (H, T, d_k)
    return heads.transpose(0, 1).reshape(t, d_model) @ w["W_o"]  # (T, H, d_k) -> (T, d_model) @ (d_model, d_model)


def _ffn(x: torch.Tensor, w: dict[str, torch.Tensor], activation: str) -> torch.Tensor:
    """φ(x W_1) W_2 (biases 0 at initialisation)."""
    hidden = x @ w["W_1"]  # (T, d_model) @ (d_model, d_ff) -> (T, d_ff)
    return (F.relu(hidden) if activation == "relu" else F.gelu(hidden)) @ w["W_2"]  # (T, d_ff) -> (T, d_model)


def stack_block(x: torch.Tensor, w: dict[str, torch.Tensor], config: StackConfig) -> torch.Tensor:
    """One block of the stack, its residuals and norms switched on or off by `config`."""
    def norm(z: torch.Tensor) -> torch.Tensor:  # LN with γ = 1, β = 0, or nothing
        return F.layer_norm(z, z.shape[-1:], eps=LN_EPS) if config.norm else z

    def add(stream: torch.Tensor, update: torch.Tensor) -> torch.Tensor:  # x + F(x), or F(x) alone
        return stream + update if config.residual else update

    if config.placement == "post":
        h = norm(add(x, _attention(x, w, config.n_heads)))  # LN_1(x + MHA(x))
        return norm(add(h, _ffn(h, w, config.activation)))  # LN_2(h + FFN(h))
    h = add(x, _attention(norm(x), w, config.n_heads))  # x + MHA(LN_1(x))
    return add(h, _ffn(norm(h), w, config.activation))  # h + FFN(LN_2(h))


def stack_states(x: np.ndarray, weights: dict[str, torch.Tensor], config: StackConfig) -> list[torch.Tensor]:
    """The residual stream before the first block and after each block: ``depth + 1`` tensors ``(T, d_model)``."""
    states = [torch.tensor(as_float_array(x, "x", min_ndim=2), dtype=torch.float64)]
    for block in blocks_of(weights):
        states.append(stack_block(states[-1], block, config))
    return states


def probe(config: StackConfig, shape: tuple[int, int]) -> torch.Tensor:
    """R ``(T, d_model)``, the loss's fixed random direction, of Frobenius norm 1."""
    r = torch.randn(shape, generator=torch.Generator().manual_seed(int(config.seed) + 1), dtype=torch.float64)
    return r / r.norm()


def stack_loss(x: np.ndarray, weights: dict[str, torch.Tensor], config: StackConfig) -> torch.Tensor:
    """L = Σ R ⊙ y, y the top of the stack."""
    top = stack_states(x, weights, config)[-1]
    return (probe(config, tuple(top.shape)) * top).sum()


@dataclass(frozen=True)
class DepthSweep:
    """Per depth ℓ (0 = the input, then after each block), read-only arrays."""

    config: StackConfig
    stream: np.ndarray  # (depth + 1,): mean over tokens of ‖x_ℓ[t]‖
    update: np.ndarray  # (depth,): mean over tokens of ‖x_ℓ[t] − x_{ℓ−1}[t]‖, what block ℓ changed
    self_cosine: np.ndarray  # (depth + 1, T): cos(x_ℓ[t], x_0[t]), each token against its own input
    token_cosine: np.ndarray  # (depth + 1,): mean cosine between two different tokens' vectors
    grad_norm: np.ndarray  # (depth,): ‖∂L/∂(W_q, W_k, W_v, W_o, W_1, W_2 of block ℓ)‖

    @property
    def first_block_gradient(self) -> float:
        return float(self.grad_norm[0])


def _cosine_rows(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """cos of each row of a with the same row of b; 0 for a zero row."""
    return F.cosine_similarity(a, b, dim=-1, eps=1e-300)


def depth_sweep(x: np.ndarray, config: StackConfig) -> DepthSweep:
    """Run the stack forward on ``x`` ``(T, d_model)`` and backward from L once; measure every depth."""
    x = as_float_array(x, "x", min_ndim=2)
    weights = stack_weights(config, x.shape[1])
    states = stack_states(x, weights, config)
    top = states[-1]
    loss = (probe(config, tuple(top.shape)) * top).sum()
    grads = torch.autograd.grad(loss, [weights[n] for n in WEIGHT_NAMES])  # each (depth, fan_in, fan_out)
    with torch.no_grad():
        stack = torch.stack(states)  # (depth + 1, T, d_model)
        norms = stack.norm(dim=-1)  # (depth + 1, T)
        update = (stack[1:] - stack[:-1]).norm(dim=-1).mean(dim=-1)  # (depth,)
        self_cos = _cosine_rows(stack, stack[:1].expand_as(stack))  # (depth + 1, T)
        unit = stack / norms.clamp_min(1e-300)[..., None]  # (depth + 1, T, d_model)
        gram = unit @ unit.transpose(-1, -2)  # (depth + 1, T, T): cosines between tokens
        t = x.shape[0]
        token_cos = (gram.sum(dim=(-1, -2)) - gram.diagonal(dim1=-2, dim2=-1).sum(-1)) / max(t * (t - 1), 1)
        grad_norm = sum(g.pow(2).sum(dim=(1, 2)) for g in grads).sqrt()  # (depth,): all six matrices of a block
    arrays = dict(stream=norms.mean(dim=-1).numpy(), update=update.numpy(), self_cosine=self_cos.numpy(),
                  token_cosine=token_cos.numpy(), grad_norm=grad_norm.numpy())
    for a in arrays.values():
        a.setflags(write=False)
    return DepthSweep(config=config, **arrays)
