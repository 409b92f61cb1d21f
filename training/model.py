r"""The tiny Transformer encoder that is trained: embeddings, positions, blocks of attention and MLP, a readout.

A one- or two-layer encoder reads a sequence of digits and predicts one output digit at every position:

.. math::

    H = \operatorname{Embed}(x) + P,\qquad
    H \leftarrow H + \operatorname{MultiHead}(\operatorname{LN}(H)),\qquad
    H \leftarrow H + \operatorname{MLP}(\operatorname{LN}(H)),\qquad
    \hat y_i = \operatorname{softmax}(h_i W_{out})

Shapes follow `core`: ``B`` batch, ``H`` heads, ``T`` positions, ``d_k = d_model / n_heads``,
attention weights ``(B, H, T, T)``.
"""

from __future__ import annotations

import math
import threading
from typing import Protocol, TypeVar

import torch
from torch import nn
from torch.nn import functional as F

from core.positional import positional_encoding


class KeyValueCache:
    """One layer's keys and values of the positions already read, kept so a decoder reads each position once."""

    def __init__(self) -> None:
        self.k: torch.Tensor | None = None
        self.v: torch.Tensor | None = None

    @property
    def length(self) -> int:
        """Positions held."""
        return 0 if self.k is None else self.k.shape[-2]

    def extend(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append the new positions' keys and values ``(B, H, T_new, d_k)``; every position's, ``(B, H, T, d_k)``."""
        self.k = k if self.k is None else torch.cat([self.k, k], dim=-2)  # (B, H, T_past + T_new, d_k)
        self.v = v if self.v is None else torch.cat([self.v, v], dim=-2)
        return self.k, self.v


class Packing:
    r"""The positions of a padded batch ``(B, T)`` that are read, ``N`` of them in row order: each row's first
    ``lengths[b]`` (the rest of a row is padding, at its end).

    The layers that work position by position (the layer norms, the MLP, the readout) run on the ``(N, d)``
    positions read alone; attention, which mixes positions, runs on the batch's layout ``(B, T, d)`` with zeros for
    the padding. Under a causal mask a position reads only itself and the positions before it, all of them read, so
    the padding never reaches them: the result is the padded batch's at the positions read.
    """

    def __init__(self, lengths: torch.Tensor, T: int) -> None:
        self.B, self.T = len(lengths), T
        self.where = (torch.arange(T) < lengths[:, None]).flatten().nonzero().squeeze(1)  # (N,): b * T + t

    @property
    def positions(self) -> torch.Tensor:
        """``(N,)`` each position's index in its row, ``t``."""
        return self.where % self.T

    def pack(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, T, ...)`` -> ``(N, ...)``: the positions read."""
        return x.reshape(self.B * self.T, *x.shape[2:]).index_select(0, self.where)

    def pad(self, x: torch.Tensor) -> torch.Tensor:
        """``(N, d)`` -> ``(B, T, d)``: the positions read in their rows, zeros at the padding."""
        return x.new_zeros(self.B * self.T, x.shape[-1]).index_copy(0, self.where, x).view(self.B, self.T, -1)


class MultiHeadSelfAttention(nn.Module):
    r"""``softmax(Q K^T / sqrt(d_k)) V`` in every head, returning the weights so they can be drawn.

    A ``mask`` ``(T_q, T_k)`` marks with True the keys each query may read (a decoder's causal mask), and
    ``is_causal`` says it is the square causal mask; a ``cache`` holds the earlier positions' keys and values, so
    only the new positions are projected. With ``need_weights=False`` (a training step, a held-out score) the same
    formula is PyTorch's one fused kernel, ``scaled_dot_product_attention``, which never keeps the weights: the
    weights returned are None.
    """

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, d_model, bias=False)
        self.W_v = nn.Linear(d_model, d_model, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None, cache: KeyValueCache | None = None,
                need_weights: bool = True, is_causal: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        B, T, d_model = x.shape

        def split(t: torch.Tensor) -> torch.Tensor:  # (B, T, d_model) -> (B, H, T, d_k)
            return t.view(B, T, self.n_heads, self.d_k).transpose(1, 2)

        q, k, v = split(self.W_q(x)), split(self.W_k(x)), split(self.W_v(x))  # each (B, H, T, d_k)
        if cache is not None:
            k, v = cache.extend(k, v)  # each (B, H, T_k, d_k): the cached positions, then these
        weights = None
        if need_weights:
            # (B, H, T, d_k) @ (B, H, d_k, T_k) -> (B, H, T, T_k)
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
            if mask is not None:
                scores = scores.masked_fill(~mask, float("-inf"))  # a masked key gets weight exactly 0
            weights = scores.softmax(dim=-1)  # (B, H, T, T_k), each row sums to 1
            heads = weights @ v  # (B, H, T, T_k) @ (B, H, T_k, d_k) -> (B, H, T, d_k)
        else:  # softmax(Q K^T / sqrt(d_k) + M) V in one kernel: (B, H, T, d_k) with (B, H, T_k, d_k) -> (B, H, T, d_k)
            heads = F.scaled_dot_product_attention(q, k, v, attn_mask=None if is_causal else mask, is_causal=is_causal)
        merged = heads.transpose(1, 2).reshape(B, T, d_model)  # (B, H, T, d_k) -> (B, T, d_model)
        return self.W_o(merged), weights


class Block(nn.Module):
    """Pre-norm Transformer layer: attention then a 4x-wide MLP, each added back to the residual stream."""

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = MultiHeadSelfAttention(d_model, n_heads)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.ReLU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None, cache: KeyValueCache | None = None,
                need_weights: bool = True, is_causal: bool = False,
                packing: Packing | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``x (B, T, d_model)``, or with `packing` the positions read ``(N, d_model)``; the same shape back, and the
        attention weights ``(B, H, T, T_k)`` if asked for."""
        h = self.ln1(x)
        if packing is not None:
            h = packing.pad(h)  # (N, d_model) -> (B, T, d_model): attention reads the rows
        a, weights = self.attn(h, mask, cache, need_weights, is_causal)  # (B, T, d_model), (B, H, T, T_k)
        if packing is not None:
            a = packing.pack(a)  # (B, T, d_model) -> (N, d_model)
        x = x + a
        return x + self.mlp(self.ln2(x)), weights


class TinyTransformer(nn.Module):
    """Token embedding + positional encoding -> `n_layers` blocks -> a linear head over the vocabulary."""

    def __init__(self, vocab: int, seq_len: int, d_model: int, n_heads: int, n_layers: int, pos: str) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        if pos == "sinusoidal":
            self.register_buffer("P", torch.tensor(positional_encoding(seq_len, d_model), dtype=torch.float32))
        elif pos == "learned":
            self.P = nn.Parameter(0.5 * torch.randn(seq_len, d_model))
        else:  # "none": every position looks the same
            self.register_buffer("P", torch.zeros(seq_len, d_model))
        self.blocks = nn.ModuleList(Block(d_model, n_heads) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.out = nn.Linear(d_model, vocab)

    def forward(self, tokens: torch.Tensor, need_weights: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``tokens (B, T) -> logits (B, T, vocab)`` and attention weights ``(B, n_layers, H, T, T)``; without
        `need_weights` (training, scoring) the attention is PyTorch's fused kernel and the weights are None."""
        x = self.embed(tokens) + self.P[: tokens.shape[1]]  # (B, T, d_model) + (T, d_model)
        maps = []
        for block in self.blocks:
            x, weights = block(x, need_weights=need_weights)
            maps.append(weights)
        logits = self.out(self.ln_f(x))  # (B, T, vocab)
        return logits, torch.stack(maps, dim=1) if need_weights else None  # (B, L, H, T, T)


M = TypeVar("M", bound=TinyTransformer)


class ModelConfig(Protocol):
    """What building a model reads of a run's config (`training.config.TrainConfig`, `decoder.config.DecoderConfig`)."""

    seed: int

    @property
    def architecture(self) -> tuple[int, int, int, int, int, str]: ...

#: PyTorch's layers draw their initial weights from its one global generator, which every thread shares. Each
#: session of the app runs in a thread of its own, so seeding that generator and drawing a model's weights from it
#: happen under this lock: no other build can draw from (or reseed) the generator in between.
_GLOBAL_GENERATOR_LOCK = threading.Lock()


def build_model(config: ModelConfig, kind: type[M] = TinyTransformer) -> M:
    """The untrained model of `config` (a `TinyTransformer`, or its subclass `kind`), its weights drawn from
    PyTorch's CPU generator seeded with ``config.seed``.

    The global random state is restored afterwards, so building a model never disturbs other code, and builds in
    several threads at once each get the weights of their own seed.
    """
    with _GLOBAL_GENERATOR_LOCK, torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(config.seed)  # the CPU generator only: the model is built on the CPU
        return kind(*config.architecture)


def parameter_count(model: nn.Module) -> int:
    """Number of trainable numbers in `model`."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
