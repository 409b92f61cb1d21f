"""What determines a decoder's training run: its sizes, the optimiser's settings and the seed.

Equal `DecoderConfig`s give identical runs (`decoder.trainer`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from core._checks import positive_int
from decoder.language import MAX_SENTENCE, VOCABULARY

#: Positions the decoder reads: enough for the longest sentence, which it predicts word by word.
CONTEXT = MAX_SENTENCE


@dataclass(frozen=True)
class DecoderConfig:
    """Everything that determines a decoder's training run; equal configs give identical runs. The defaults are
    the decoder page's."""

    d_model: int = 32
    n_heads: int = 2
    n_layers: int = 2
    steps: int = 500
    lr: float = 1e-2
    batch: int = 32
    held_out_share: float = 0.2
    seed: int = 0
    n_checkpoints: int = 16

    def __post_init__(self) -> None:
        for name in ("d_model", "n_heads", "n_layers", "steps", "batch", "n_checkpoints"):
            positive_int(getattr(self, name), name)
        if self.d_model % self.n_heads != 0:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}.")
        if not (math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be a positive number, got {self.lr!r}.")
        if not 0.0 < self.held_out_share < 1.0:
            raise ValueError(f"held_out_share must lie strictly between 0 and 1, got {self.held_out_share!r}.")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed!r}.")

    @property
    def architecture(self) -> tuple[int, int, int, int, int, str]:
        """``(vocab, context, d_model, n_heads, n_layers, pos)``, the order of `decoder.model.Decoder`'s arguments."""
        return len(VOCABULARY), CONTEXT, self.d_model, self.n_heads, self.n_layers, "sinusoidal"
