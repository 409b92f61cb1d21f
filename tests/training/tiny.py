"""A training configuration small enough to train in well under a second on an idle machine."""

from training.config import TrainConfig

TINY = TrainConfig(seq_len=5, vocab=5, d_model=16, n_heads=2, steps=30, n_eval=64, n_checkpoints=5)
