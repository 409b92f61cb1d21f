"""What determines a training run: the task, the model's sizes, the optimiser's settings and the seed.

Equal `TrainConfig`s give identical runs (`training.trainer`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from core._checks import positive_int

TASKS: dict[str, str] = {
    "reverse": "reverse the sequence",
    "copy": "copy the sequence",
    "sort": "sort the sequence (ascending)",
    "first": "repeat the first token at every position",
}
POSITIONAL: dict[str, str] = {
    "sinusoidal": "fixed sine/cosine vectors (core.positional_encoding)",
    "learned": "one learned vector per position",
    "none": "no positional information at all",
}
#: Torch threads used for training. For a model this small one thread is as fast as two on an idle machine,
#: and faster when another core is busy (``python -m benchmarks.training``).
NUM_THREADS = 1
#: The largest vocabulary^length the integer sequence codes can hold (codes are int64).
_MAX_CODE = 2**62


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines a training run; equal configs give identical runs."""

    task: str = "reverse"
    seq_len: int = 8
    vocab: int = 10
    d_model: int = 32
    n_heads: int = 2
    n_layers: int = 1
    pos: str = "sinusoidal"
    steps: int = 400
    lr: float = 3e-3
    batch: int = 64
    seed: int = 0
    n_eval: int = 256
    n_checkpoints: int = 24

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {sorted(TASKS)}, got {self.task!r}.")
        if self.pos not in POSITIONAL:
            raise ValueError(f"pos must be one of {sorted(POSITIONAL)}, got {self.pos!r}.")
        for name in ("seq_len", "vocab", "d_model", "n_heads", "n_layers", "steps", "batch", "n_eval",
                     "n_checkpoints"):
            positive_int(getattr(self, name), name)
        if self.seq_len < 2 or self.vocab < 2:
            raise ValueError(f"seq_len and vocab must be at least 2, got seq_len={self.seq_len}, vocab={self.vocab}.")
        if self.vocab**self.seq_len > _MAX_CODE:
            raise ValueError(f"vocab**seq_len = {self.vocab}**{self.seq_len} is too many sequences to index.")
        if self.d_model % self.n_heads != 0:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}.")
        if not (math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be a positive number, got {self.lr!r}.")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed!r}.")

    @property
    def architecture(self) -> tuple[int, int, int, int, int, str]:
        """What shapes the model: ``(vocab, seq_len, d_model, n_heads, n_layers, pos)``, the order of
        `training.model.TinyTransformer`'s arguments. Configs that agree here have models of the same size."""
        return self.vocab, self.seq_len, self.d_model, self.n_heads, self.n_layers, self.pos
