r"""The decoder-only Transformer: the tiny Transformer of `training.model`, with every position blind to its future.

.. math::

    H = \operatorname{Embed}(x) + P,\qquad
    H \leftarrow H + \operatorname{MaskedMultiHead}(\operatorname{LN}(H)),\qquad
    H \leftarrow H + \operatorname{MLP}(\operatorname{LN}(H)),\qquad
    p(x_{t+1} \mid x_{\le t}) = \operatorname{softmax}(h_t W_{out})

Position ``t`` may attend to positions ``0..t`` only, so the logits at ``t`` depend on ``x_0..x_t`` and nothing
after: one pass over a whole sentence gives every position's next-word prediction at once (training), and a
`KeyValueCache` per layer lets generation read each new word once instead of the whole text again.
"""

from __future__ import annotations

import torch

from decoder.config import DecoderConfig
from training.model import KeyValueCache, Packing, TinyTransformer, build_model


def causal_mask(n_new: int, n_past: int = 0) -> torch.Tensor:
    """``(n_new, n_past + n_new)`` booleans: the new position ``i`` (absolute ``n_past + i``) may read keys
    ``0..n_past + i``."""
    return torch.ones(n_new, n_past + n_new, dtype=torch.bool).tril(diagonal=n_past)


class Decoder(TinyTransformer):
    """Token embedding + sinusoidal positions -> `n_layers` masked blocks -> logits over the vocabulary."""

    def forward(self, tokens: torch.Tensor, caches: list[KeyValueCache] | None = None, need_weights: bool = True,
                lengths: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``tokens (B, T) -> logits (B, T, vocab)`` and attention weights ``(B, n_layers, H, T, T_k)``.

        With `caches` (one per layer), `tokens` are the positions after the ones already cached, and
        ``T_k = T_past + T``. Without `need_weights` (training, scoring) the attention is PyTorch's fused kernel and
        the weights are None. With `lengths` ``(B,)`` (training, scoring: the rest of each row is padding) only each
        row's first ``lengths[b]`` positions are read, and the logits are theirs alone, ``(N, vocab)`` in row order
        (`training.model.Packing`); no weights.
        """
        if lengths is not None:
            return self._read(tokens, lengths), None
        n_past = 0 if caches is None else caches[0].length
        T = tokens.shape[1]
        x = self.embed(tokens) + self.P[n_past : n_past + T]  # (B, T, d_model) + (T, d_model)
        mask = causal_mask(T, n_past)  # (T, T_k)
        maps = []
        for layer, block in enumerate(self.blocks):
            x, weights = block(x, mask, None if caches is None else caches[layer], need_weights, is_causal=n_past == 0)
            maps.append(weights)
        logits = self.out(self.ln_f(x))  # (B, T, vocab)
        return logits, torch.stack(maps, dim=1) if need_weights else None  # (B, L, H, T, T_k)

    def _read(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """``tokens (B, T)`` -> ``(N, vocab)``: the logits at each row's first ``lengths[b]`` positions only."""
        packing = Packing(lengths, tokens.shape[1])
        x = self.embed(packing.pack(tokens)) + self.P[packing.positions]  # (N, d_model) + (N, d_model)
        for block in self.blocks:
            x, _ = block(x, need_weights=False, is_causal=True, packing=packing)
        return self.out(self.ln_f(x))  # (N, vocab)

    def new_caches(self) -> list[KeyValueCache]:
        """One empty cache per layer."""
        return [KeyValueCache() for _ in self.blocks]


def build_decoder(config: DecoderConfig) -> Decoder:
    """The untrained decoder of `config`, its weights drawn from PyTorch's CPU generator seeded with ``config.seed``."""
    return build_model(config, Decoder)
