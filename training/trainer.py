r"""Train the tiny Transformer (`training.model`) on a toy task (`training.tasks`) and record its attention.

The lesson says W_q, W_k and W_v "start random and are learned". `Trainer` does exactly that, on
the CPU, in seconds, with Adam (`training.optimiser`) on fresh random batches, minimising the mean
cross-entropy over every position of every sequence,

.. math:: \mathcal L = -\frac{1}{BT}\sum_{b,i} \log \hat y_{b,i}[y_{b,i}],

and keeps, at every checkpoint, the held-out accuracy, the weights and every layer's attention on
one held-out sequence (`TrainingResult`). Runs are resumable and deterministic.
"""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from training.config import NUM_THREADS, TrainConfig
from training.model import TinyTransformer, build_model
from training.optimiser import Adam
from training.tasks import held_out_set, make_targets, sequence_codes, training_batch


@dataclass(frozen=True)
class Progress:
    """What `Trainer.run` reports to its `on_step` callback after every optimisation step."""

    step: int
    steps: int
    loss: float
    eval_accuracy: float
    elapsed_s: float


@dataclass
class TrainingResult:
    """A (possibly partial) training run: curves, attention snapshots and weights at every checkpoint.

    Attributes:
        probe: ``(T,)`` the held-out sequence whose attention is snapshotted.
        train_loss: ``(steps_done,)`` cross-entropy of each training batch.
        checkpoint_steps: ``(C,)`` steps at which the model was evaluated and snapshotted (0 = the random model).
        eval_loss, eval_accuracy, eval_sequence_accuracy: ``(C,)`` loss, per-token and whole-sequence
            accuracy on the held-out set at each checkpoint.
        attention: ``C`` arrays ``(n_layers, H, T, T)``: the probe's attention weights at each checkpoint.
        states: ``C`` state dicts: the model's weights at each checkpoint.
        elapsed_s: wall time spent training so far.
    """

    config: TrainConfig
    probe: np.ndarray
    train_loss: list[float] = field(default_factory=list)
    eval_loss: list[float] = field(default_factory=list)
    eval_accuracy: list[float] = field(default_factory=list)
    eval_sequence_accuracy: list[float] = field(default_factory=list)
    checkpoint_steps: list[int] = field(default_factory=list)
    attention: list[np.ndarray] = field(default_factory=list)
    states: list[dict[str, torch.Tensor]] = field(default_factory=list)
    elapsed_s: float = 0.0
    _models: dict[int, TinyTransformer] = field(default_factory=dict, repr=False, compare=False)

    @property
    def steps_done(self) -> int:
        return len(self.train_loss)

    @property
    def complete(self) -> bool:
        return self.steps_done >= self.config.steps

    def steps_to_accuracy(self, threshold: float) -> int | None:
        """The first evaluated step with held-out per-token accuracy >= `threshold`, or None."""
        return next((s for s, a in zip(self.checkpoint_steps, self.eval_accuracy, strict=True) if a >= threshold), None)

    def windowed_train_loss(self) -> tuple[np.ndarray, np.ndarray]:
        """Training-batch loss averaged over each evaluation interval: ``(eval steps > 0, mean loss)``.

        The value at step ``s`` is the mean over the steps after the previous evaluation up to ``s``;
        single batches are too noisy to plot.
        """
        steps = np.asarray([s for s in self.checkpoint_steps if s > 0], dtype=np.int64)
        return steps, interval_means(self.train_loss, steps)

    def model_at(self, checkpoint: int = -1) -> TinyTransformer:
        """The model as it was at checkpoint index `checkpoint` (``-1`` = the latest); built once, then reused."""
        index = range(len(self.states))[checkpoint]
        if index not in self._models:
            model = build_model(self.config)
            model.load_state_dict(self.states[index])
            self._models[index] = model
        return self._models[index]


def interval_means(values: Sequence[float], ends: np.ndarray) -> np.ndarray:
    """The mean of `values` over each interval ending at `ends` (exclusive), the first from 0:
    ``mean(values[0:ends[0]]), mean(values[ends[0]:ends[1]]), …``."""
    values = np.asarray(values)
    starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)  # (E,): each interval's first index
    return np.array([values[a:b].mean() for a, b in zip(starts, ends, strict=True)])


def checkpoint_schedule(config: TrainConfig) -> list[int]:
    """Steps at which the model is evaluated and snapshotted: 0 to ``steps``, closer together early on.

    Square spacing, ``round(steps * (c / C)^2)``: attention changes fastest at the start of training.
    """
    raw = np.round(config.steps * np.linspace(0.0, 1.0, config.n_checkpoints + 1) ** 2).astype(int)
    return sorted(set(raw.tolist()))


@contextlib.contextmanager
def deterministic_torch(num_threads: int = NUM_THREADS) -> Iterator[None]:
    """Fixed thread count and deterministic kernels for the duration of a run, then restore both."""
    # set_deterministic_debug_mode("error") is torch.use_deterministic_algorithms(True) without the
    # several-second import of torch._inductor that the latter triggers on its first call.
    threads, mode = torch.get_num_threads(), torch.get_deterministic_debug_mode()
    torch.set_num_threads(num_threads)
    torch.set_deterministic_debug_mode("error")
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        torch.set_deterministic_debug_mode(mode)


@torch.no_grad()
def evaluate(model: TinyTransformer, x: torch.Tensor, y: torch.Tensor) -> tuple[float, float, float]:
    """``(loss, per-token accuracy, whole-sequence accuracy)`` of `model` on inputs `x` and targets `y` ``(N, T)``."""
    logits, _ = model(x, need_weights=False)  # (N, T, vocab)
    loss = nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten())  # (N*T, vocab) vs (N*T,)
    right = logits.argmax(-1) == y  # (N, T)
    return float(loss), float(right.float().mean()), float(right.all(-1).float().mean())


def predict(model: TinyTransformer, tokens: np.ndarray | list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The model's answer for one sequence: ``(predicted tokens (T,), probabilities (T, vocab),
    attention (n_layers, H, T, T))``."""
    x = torch.as_tensor(np.asarray(tokens), dtype=torch.int64)
    vocab, max_len = model.embed.num_embeddings, model.P.shape[0]
    if x.ndim != 1 or not 1 <= len(x) <= max_len:
        raise ValueError(f"predict needs one sequence of 1 to {max_len} tokens, got shape {tuple(x.shape)}.")
    if int(x.min()) < 0 or int(x.max()) >= vocab:
        raise ValueError(f"tokens must lie in 0..{vocab - 1} (the vocabulary), got {x.tolist()}.")
    with deterministic_torch(), torch.no_grad():
        logits, maps = model(x[None])  # (1, T, vocab), (1, L, H, T, T)
        probs = logits[0].softmax(-1)  # (T, vocab)
    return probs.argmax(-1).numpy(), probs.numpy().astype(np.float64), maps[0].numpy().astype(np.float64)


class Trainer:
    """Adam on fresh random batches, resumable: ``run`` can be called repeatedly, in chunks.

    Training is deterministic: a config always gives the same curves, whether it runs in
    one call or in many (the data generator, weights and optimiser state carry over).
    """

    def __init__(self, config: TrainConfig) -> None:
        self.config = config
        self.model = build_model(config)
        self.optimiser = Adam(self.model.parameters(), lr=config.lr)
        self.x_eval = held_out_set(config)  # (N, T)
        self.y_eval = make_targets(self.x_eval, config.task)  # (N, T)
        self.eval_codes = sequence_codes(self.x_eval, config.vocab)  # (N,)
        self.generator = torch.Generator().manual_seed(config.seed)
        self.checkpoints = set(checkpoint_schedule(config))
        self.result = TrainingResult(config=config, probe=self.x_eval[0].numpy().copy())
        with deterministic_torch():
            self._record(0)

    def _record(self, step: int) -> None:
        """At a checkpoint step: evaluate on the held-out set, snapshot the probe's attention and the weights."""
        if step not in self.checkpoints:
            return
        r = self.result
        r.checkpoint_steps.append(step)
        loss, acc, seq_acc = evaluate(self.model, self.x_eval, self.y_eval)
        r.eval_loss.append(loss)
        r.eval_accuracy.append(acc)
        r.eval_sequence_accuracy.append(seq_acc)
        with torch.no_grad():
            _, maps = self.model(self.x_eval[:1])  # (1, L, H, T, T)
        r.attention.append(maps[0].numpy().astype(np.float64))  # (L, H, T, T)
        r.states.append(copy.deepcopy(self.model.state_dict()))

    def step(self) -> float:
        """One optimisation step on a fresh batch; returns the batch's loss."""
        x = training_batch(self.config, self.generator, self.eval_codes)  # (batch, T)
        logits, _ = self.model(x, need_weights=False)  # (batch, T, vocab): the fused attention, no weights kept
        y = make_targets(x, self.config.task)  # (batch, T)
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten())  # (batch*T, vocab) vs (batch*T,)
        return self.optimiser.descend(loss)

    def run(self, max_seconds: float | None = None,
            on_step: Callable[[Progress], bool | None] | None = None) -> TrainingResult:
        """Train until ``config.steps`` are done, `max_seconds` have passed, or `on_step` returns True.

        Returns the result so far (the same object every call, updated in place).
        """
        r = self.result
        last = time.perf_counter()
        deadline = None if max_seconds is None else last + max_seconds
        with deterministic_torch():
            while not r.complete:
                r.train_loss.append(self.step())
                self._record(r.steps_done)
                now = time.perf_counter()
                r.elapsed_s += now - last
                if on_step is not None and on_step(
                    Progress(r.steps_done, self.config.steps, r.train_loss[-1], r.eval_accuracy[-1], r.elapsed_s)
                ):
                    break
                last = time.perf_counter()  # the callback's own time is not training time
                if deadline is not None and now >= deadline:
                    break
        return r


def train(config: TrainConfig, on_step: Callable[[Progress], bool | None] | None = None) -> TrainingResult:
    """Train `config`'s model from scratch to the end (or until `on_step` returns True); see `Trainer`."""
    return Trainer(config).run(on_step=on_step)
