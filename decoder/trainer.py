r"""Train the decoder on the language's training sentences: next-word cross-entropy with teacher forcing.

Each batch is whole sentences. The decoder reads a sentence's words ``x_0..x_{n-2}`` in one pass and is scored on
every next word at once (the true previous words are fed in, never its own guesses: teacher forcing),

.. math:: \mathcal L = -\frac{1}{N}\sum_{b,t} \log p(x_{b,t+1} \mid x_{b,\le t}),

over the ``N`` positions that hold a word (the padding is neither read nor scored). Runs are resumable and
deterministic, like `training.trainer.Trainer`'s, whose thread settings they share.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from decoder.config import DecoderConfig
from decoder.language import PAD_ID, Corpus, split
from decoder.model import Decoder, build_decoder
from training.optimiser import Adam
from training.trainer import deterministic_torch, interval_means


@dataclass(frozen=True)
class Scores:
    """Next-word loss, perplexity and accuracy over the positions of some sentences that hold a word."""

    loss: float
    accuracy: float

    @property
    def perplexity(self) -> float:
        r"""``exp(loss)``: as unsure as a uniform choice among this many words."""
        return math.exp(self.loss)


@dataclass
class DecoderRun:
    """A (possibly partial) run: training-batch losses, held-out scores at checkpoints, the latest weights.

    Attributes:
        train_loss: ``(steps_done,)`` cross-entropy of each training batch.
        checkpoint_steps: steps at which the held-out sentences were scored (0 = the random model).
        held_out: the held-out `Scores` at each checkpoint.
        state: the model's weights after the latest step.
        cpu_s: CPU time of this process's training threads so far (``time.thread_time``, summed over chunks).
    """

    config: DecoderConfig
    train_loss: list[float] = field(default_factory=list)
    checkpoint_steps: list[int] = field(default_factory=list)
    held_out: list[Scores] = field(default_factory=list)
    state: dict[str, torch.Tensor] = field(default_factory=dict)
    elapsed_s: float = 0.0
    cpu_s: float = 0.0

    @property
    def steps_done(self) -> int:
        return len(self.train_loss)

    @property
    def complete(self) -> bool:
        return self.steps_done >= self.config.steps

    def windowed_train_loss(self, window: int) -> tuple[np.ndarray, np.ndarray]:
        """Training-batch loss averaged over consecutive windows of `window` steps: ``(last step, mean loss)``."""
        ends = np.arange(window, self.steps_done + 1, window)
        return ends, interval_means(self.train_loss, ends)


def next_word_logits(model: Decoder, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Teacher forcing on the padded sentences `ids` ``(B, T)``: the logits ``(N, vocab)`` for the next word after
    each word that has one, and those next words ``(N,)``, sentence after sentence. The decoder reads each
    sentence's words but its last, never the padding (`Decoder`'s `lengths`), and keeps no attention weights."""
    inputs, targets = ids[:, :-1], ids[:, 1:]  # (B, T-1) each: a word, and the word after it
    words = targets != PAD_ID  # (B, T-1): each row's first n - 1 positions, for a sentence of n words
    logits, _ = model(inputs, need_weights=False, lengths=words.sum(1))  # (N, vocab)
    return logits, targets[words]


def next_word_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of `logits` ``(N, vocab)`` on the next words `targets` ``(N,)``."""
    return nn.functional.cross_entropy(logits, targets)


def scores_of(logits: torch.Tensor, targets: torch.Tensor) -> Scores:
    """Next-word loss and accuracy of `logits` ``(N, vocab)`` on the next words `targets` ``(N,)``."""
    right = logits.argmax(-1) == targets  # (N,)
    return Scores(float(next_word_loss(logits, targets)), float(right.sum() / len(targets)))


@torch.no_grad()
def score(model: Decoder, ids: np.ndarray) -> Scores:
    """Next-word loss and accuracy of `model` on the padded sentences `ids` ``(S, T)``."""
    return scores_of(*next_word_logits(model, torch.as_tensor(ids)))


def checkpoint_schedule(config: DecoderConfig) -> list[int]:
    """Steps at which the held-out sentences are scored: 0 to ``steps``, evenly."""
    return sorted(set(np.round(np.linspace(0, config.steps, config.n_checkpoints + 1)).astype(int).tolist()))


class DecoderTrainer:
    """Adam on random batches of training sentences, resumable: ``run`` can be called repeatedly, in chunks,
    and gives the same run however it is chunked."""

    def __init__(self, config: DecoderConfig) -> None:
        self.config = config
        self.corpus: Corpus = split(config.held_out_share, config.seed)
        self.model = build_decoder(config)
        self.optimiser = Adam(self.model.parameters(), lr=config.lr)
        self.generator = torch.Generator().manual_seed(config.seed)
        self.checkpoints = set(checkpoint_schedule(config))
        self.train_ids = torch.as_tensor(self.corpus.train)  # (N_train, T)
        self.result = DecoderRun(config=config)
        with deterministic_torch():
            self._record(0)
        self.result.state = copy.deepcopy(self.model.state_dict())

    def _record(self, step: int) -> None:
        """At a checkpoint, the held-out scores."""
        r = self.result
        if step in self.checkpoints:
            r.checkpoint_steps.append(step)
            r.held_out.append(score(self.model, self.corpus.held_out))

    def step(self) -> float:
        """One optimisation step on a batch of training sentences drawn at random; returns the batch's loss."""
        rows = torch.randint(len(self.train_ids), (self.config.batch,), generator=self.generator)  # (batch,)
        logits, targets = next_word_logits(self.model, self.train_ids[rows])  # (N, vocab), (N,): the batch's words
        return self.optimiser.descend(next_word_loss(logits, targets))

    def run(self, max_seconds: float | None = None) -> DecoderRun:
        """Train until ``config.steps`` are done or `max_seconds` have passed.

        Returns the run so far (the same object every call, updated in place).
        """
        r = self.result
        start, cpu_start = time.perf_counter(), time.thread_time()
        with deterministic_torch():
            while not r.complete:
                r.train_loss.append(self.step())
                self._record(r.steps_done)
                if max_seconds is not None and time.perf_counter() - start >= max_seconds:
                    break
        r.state = copy.deepcopy(self.model.state_dict())  # the weights after the last step of this chunk
        r.elapsed_s += time.perf_counter() - start
        r.cpu_s += time.thread_time() - cpu_start
        return r


def train_decoder(config: DecoderConfig) -> DecoderRun:
    """Train `config`'s decoder from scratch to the end; see `DecoderTrainer`."""
    return DecoderTrainer(config).run()
