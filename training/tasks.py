r"""The toy sequence tasks: random digit sequences, their targets, and the held-out set.

Tasks (input ``x`` of length ``T``, target ``y`` of the same length):

* ``reverse``: :math:`y_i = x_{T-1-i}` (position i must look at position T-1-i),
* ``copy``: :math:`y_i = x_i`,
* ``sort``: ``y`` is ``x`` sorted ascending,
* ``first``: :math:`y_i = x_0` (every position must find position 0).

Each sequence has an integer code (its digits read in base ``vocab``), so that the held-out
sequences are never drawn for training.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from training.config import TASKS, TrainConfig


def make_targets(x: torch.Tensor, task: str) -> torch.Tensor:
    """The answer the model must produce for the inputs `x` ``(B, T)`` under `task`, also ``(B, T)``."""
    if task == "reverse":
        return x.flip(-1)
    if task == "copy":
        return x.clone()
    if task == "sort":
        return x.sort(dim=-1).values
    if task == "first":
        return x[:, :1].expand_as(x).clone()  # (B, 1) -> (B, T)
    raise ValueError(f"task must be one of {sorted(TASKS)}, got {task!r}.")


def target_of(digits: Sequence[int], task: str) -> np.ndarray:
    """`make_targets` for one sequence of digits: the answer ``(T,)`` the model must write."""
    return make_targets(torch.as_tensor(np.asarray(digits, dtype=np.int64))[None], task)[0].numpy()  # (1, T) -> (T,)


def sequence_codes(x: torch.Tensor, vocab: int) -> torch.Tensor:
    """Each row of `x` ``(B, T)`` as one integer (its digits in base `vocab`), ``(B,)``: equal rows, equal codes."""
    powers = vocab ** torch.arange(x.shape[-1] - 1, -1, -1, dtype=torch.int64)  # (T,)
    return (x.to(torch.int64) * powers).sum(-1)  # (B, T) * (T,) -> (B,)


def held_out_size(config: TrainConfig) -> int:
    """Number of held-out sequences: ``n_eval``, but never more than a quarter of all ``vocab**seq_len``."""
    return min(config.n_eval, max(1, config.vocab**config.seq_len // 4))


def held_out_set(config: TrainConfig) -> torch.Tensor:
    """Distinct evaluation sequences ``(N, T)``, drawn from the seed; training never sees them.

    At most a quarter of all ``vocab**seq_len`` possible sequences are held out, so
    the training stream always has plenty left to sample from.
    """
    n = held_out_size(config)
    g = torch.Generator().manual_seed(config.seed * 1_000_003 + 1)  # a stream of its own, apart from training's
    x = torch.empty(0, config.seq_len, dtype=torch.int64)
    while True:  # draw until n distinct sequences turn up (one round, except in tiny spaces)
        x = torch.cat([x, torch.randint(0, config.vocab, (2 * n + 16, config.seq_len), generator=g)])
        _, first = np.unique(sequence_codes(x, config.vocab).numpy(), return_index=True)
        if len(first) >= n:
            return x[torch.from_numpy(np.sort(first)[:n])]  # the first n distinct, in the order drawn


def training_batch(config: TrainConfig, g: torch.Generator, held_out_codes: torch.Tensor) -> torch.Tensor:
    """A batch ``(batch, T)`` of random sequences from generator `g`, none of them in the held-out set."""
    rows = []
    have = 0
    while have < config.batch:
        x = torch.randint(0, config.vocab, (2 * config.batch, config.seq_len), generator=g)
        x = x[~torch.isin(sequence_codes(x, config.vocab), held_out_codes)]
        rows.append(x)
        have += len(x)
    return torch.cat(rows)[: config.batch]


def parse_digits(text: str, vocab: int, max_len: int) -> list[int]:
    """A typed sequence as a list of tokens: ``"3 1 4 1"``, ``"3,1,4,1"`` and ``"3141"`` all give ``[3, 1, 4, 1]``.

    Raises `ValueError`, naming the problem, for anything else than 1 to `max_len` digits in ``0..vocab-1``.
    """
    parts = text.replace(",", " ").split()
    if len(parts) == 1:
        parts = list(parts[0])  # "3141" -> ["3", "1", "4", "1"]
    if not parts:
        raise ValueError("the input is empty: type some digits, e.g. 3 1 4 1.")
    bad = [p for p in parts if not (p.isdigit() and int(p) < vocab)]
    if bad:
        raise ValueError(f"{', '.join(repr(b) for b in bad[:3])} {'is' if len(bad) == 1 else 'are'} not in the "
                         f"vocabulary: the model knows the digits 0 to {vocab - 1}.")
    if len(parts) > max_len:
        raise ValueError(f"{len(parts)} digits is more than the {max_len} positions the model was built for.")
    return [int(p) for p in parts]


def answer_attention(maps: np.ndarray, x: np.ndarray | list[int], y: np.ndarray | list[int]) -> np.ndarray:
    r"""How much attention each head pays to the positions that hold the right answer, ``(n_layers, H)``.

    .. math:: \frac{1}{T} \sum_i \sum_{j:\ x_j = y_i} A_{ij}

    For ``reverse`` that is the anti-diagonal ``j = T-1-i`` (plus any repeat of the same digit),
    for ``first`` the first column. 1 means the head looks only where the answer is.

    Args:
        maps: attention weights ``(..., T, T)``, e.g. ``(n_layers, H, T, T)``.
        x, y: the input and the target sequence, ``(T,)`` each.
    """
    x, y = np.asarray(x), np.asarray(y)
    maps = np.asarray(maps, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or maps.shape[-2:] != (len(x), len(x)):
        raise ValueError(f"answer_attention needs x, y of shape (T,) and maps (..., T, T); got x {x.shape}, "
                         f"y {y.shape}, maps {maps.shape}.")
    holds_answer = y[:, None] == x[None, :]  # (T, T): key j holds query i's answer
    return (maps * holds_answer).sum(-1).mean(-1)  # (..., T, T) -> (..., T) -> (...)
