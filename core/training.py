r"""Train a tiny Transformer on a toy sequence task and record how its attention changes.

The lesson says W_q, W_k and W_v "start random and are learned". This module does
exactly that, on the CPU, in seconds: a one- or two-layer Transformer encoder reads
a sequence of digits and predicts, at every position, one output digit.

.. math::

    H = \operatorname{Embed}(x) + P,\qquad
    H \leftarrow H + \operatorname{MultiHead}(\operatorname{LN}(H)),\qquad
    H \leftarrow H + \operatorname{MLP}(\operatorname{LN}(H)),\qquad
    \hat y_i = \operatorname{softmax}(h_i W_{out})

and the loss is the mean cross-entropy over every position of every sequence,
:math:`\mathcal L = -\frac{1}{BT}\sum_{b,i} \log \hat y_{b,i}[y_{b,i}]`.

Tasks (input ``x`` of length ``T``, target ``y`` of the same length):

* ``reverse``: :math:`y_i = x_{T-1-i}` (position i must look at position T-1-i),
* ``copy``: :math:`y_i = x_i`,
* ``sort``: ``y`` is ``x`` sorted ascending,
* ``first``: :math:`y_i = x_0` (every position must find position 0).

Shapes follow `core`: ``B`` batch, ``H`` heads, ``T`` positions, ``d_k = d_model / n_heads``,
attention weights ``(B, H, T, T)``.
"""

from __future__ import annotations

import contextlib
import copy
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from core._checks import positive_int
from core.positional import positional_encoding

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
#: Torch threads used for training. For a model this small one thread is as fast as two on an idle 2-core
#: machine, and many times faster when the other core is busy (``python -m benchmarks.training``).
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


# ----------------------------------------------------------------------------------------------- data


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


def parameter_count(model: nn.Module) -> int:
    """Number of trainable numbers in `model`."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


# ---------------------------------------------------------------------------------------------- model


class MultiHeadSelfAttention(nn.Module):
    r"""``softmax(Q K^T / sqrt(d_k)) V`` in every head, returning the weights so they can be drawn."""

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, d_model, bias=False)
        self.W_v = nn.Linear(d_model, d_model, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        B, T, d_model = x.shape

        def split(t: torch.Tensor) -> torch.Tensor:  # (B, T, d_model) -> (B, H, T, d_k)
            return t.view(B, T, self.n_heads, self.d_k).transpose(1, 2)

        q, k, v = split(self.W_q(x)), split(self.W_k(x)), split(self.W_v(x))  # each (B, H, T, d_k)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)  # (B, H, T, d_k) @ (B, H, d_k, T) -> (B, H, T, T)
        weights = scores.softmax(dim=-1)  # (B, H, T, T), each row sums to 1
        heads = weights @ v  # (B, H, T, T) @ (B, H, T, d_k) -> (B, H, T, d_k)
        merged = heads.transpose(1, 2).reshape(B, T, d_model)  # (B, H, T, d_k) -> (B, T, d_model)
        return self.W_o(merged), weights


class Block(nn.Module):
    """Pre-norm Transformer layer: attention then a 4x-wide MLP, each added back to the residual stream."""

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = MultiHeadSelfAttention(d_model, n_heads)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.ReLU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a, weights = self.attn(self.ln1(x))  # (B, T, d_model), (B, H, T, T)
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

    def forward(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``tokens (B, T) -> logits (B, T, vocab)`` and attention weights ``(B, n_layers, H, T, T)``."""
        x = self.embed(tokens) + self.P[: tokens.shape[1]]  # (B, T, d_model) + (T, d_model)
        maps = []
        for block in self.blocks:
            x, weights = block(x)
            maps.append(weights)
        return self.out(self.ln_f(x)), torch.stack(maps, dim=1)  # (B, T, vocab), (B, L, H, T, T)


def build_model(config: TrainConfig) -> TinyTransformer:
    """The untrained model of `config`, its weights drawn from ``torch.manual_seed(config.seed)``.

    The global random state is restored afterwards, so building a model never disturbs other code.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        return TinyTransformer(config.vocab, config.seq_len, config.d_model, config.n_heads, config.n_layers,
                               config.pos)


# ------------------------------------------------------------------------------------------- training


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
        losses = np.asarray(self.train_loss)
        starts = np.concatenate([[0], steps[:-1]])  # (E-1,): previous evaluation step
        means = np.array([losses[a:b].mean() for a, b in zip(starts, steps, strict=True)])
        return steps, means

    def model_at(self, checkpoint: int = -1) -> TinyTransformer:
        """The model as it was at checkpoint index `checkpoint` (``-1`` = the latest); built once, then reused."""
        index = range(len(self.states))[checkpoint]
        if index not in self._models:
            model = build_model(self.config)
            model.load_state_dict(self.states[index])
            self._models[index] = model
        return self._models[index]


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
    logits, _ = model(x)  # (N, T, vocab)
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


class Adam:
    r"""Adam (Kingma and Ba, 2015), written out: the update ``torch.optim.Adam`` makes, with its defaults.

    For every parameter :math:`\theta` with gradient :math:`g`, at step :math:`t`:

    .. math::

        m \leftarrow \beta_1 m + (1 - \beta_1)\, g,\qquad
        v \leftarrow \beta_2 v + (1 - \beta_2)\, g^2,\qquad
        \theta \leftarrow \theta - \mathrm{lr}\,
            \frac{m / (1 - \beta_1^t)}{\sqrt{v / (1 - \beta_2^t)} + \epsilon}

    Written here rather than taken from ``torch.optim``: the first ``torch.optim`` optimiser created in a
    process imports ``torch._dynamo`` (with SymPy and more), seconds and about 70 MB that this app never uses.
    The test suite checks it step for step against ``torch.optim.Adam``.
    """

    def __init__(self, params: Iterator[nn.Parameter], lr: float, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8) -> None:
        self.params = [p for p in params if p.requires_grad]
        self.lr, (self.beta1, self.beta2), self.eps = lr, betas, eps
        self.t = 0
        self.m = [torch.zeros_like(p) for p in self.params]  # first moments, one per parameter
        self.v = [torch.zeros_like(p) for p in self.params]  # second moments

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        self.t += 1
        bias1, bias2 = 1 - self.beta1**self.t, 1 - self.beta2**self.t
        for p, m, v in zip(self.params, self.m, self.v, strict=True):
            if p.grad is None:
                continue
            m.mul_(self.beta1).add_(p.grad, alpha=1 - self.beta1)
            v.mul_(self.beta2).addcmul_(p.grad, p.grad, value=1 - self.beta2)
            denom = (v.sqrt() / math.sqrt(bias2)).add_(self.eps)
            p.addcdiv_(m, denom, value=-self.lr / bias1)


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
        logits, _ = self.model(x)  # (batch, T, vocab)
        y = make_targets(x, self.config.task)  # (batch, T)
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten())  # (batch*T, vocab) vs (batch*T,)
        self.optimiser.zero_grad()
        loss.backward()
        self.optimiser.step()
        return loss.item()

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
