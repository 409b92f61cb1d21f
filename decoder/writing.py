r"""Writing with the decoder: one word at a time, each read once thanks to the key-value cache.

The prompt is read in one pass (every position's keys and values go into the cache); after that each step reads
only the newest word, whose query meets the cached keys of every word before it:

.. math:: \text{step } t:\quad q_t = h_t W_q,\quad K_{\le t} = [K_{<t};\, h_t W_k],\quad
          a_t = \operatorname{softmax}\!\left(q_t K_{\le t}^\top / \sqrt{d_k}\right)

The logits of step ``t`` go through `decoder.sampling.next_word`; the word it chooses is read at step ``t + 1``.
Writing stops at the end token or when the text fills the decoder's positions.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from decoder.config import CONTEXT, DecoderConfig
from decoder.language import END_ID, PAD_ID, TOKEN_ID, VOCABULARY
from decoder.model import Decoder, build_decoder
from decoder.sampling import NextWord, Sampling, draw_for, next_word
from training.trainer import deterministic_torch

#: The words a prompt may use and a step may choose: the vocabulary without its padding token (the last id).
WORDS: tuple[str, ...] = VOCABULARY[:PAD_ID]
#: The longest prompt: one position must be left for a word to be written.
MAX_PROMPT = CONTEXT - 1


class PromptError(ValueError):
    """A prompt the decoder cannot read; the message says why and what it can read."""


def prompt_ids(words: Sequence[str]) -> list[int]:
    """Token ids of a prompt, or a `PromptError` that names the problem and lists the vocabulary."""
    if not words:
        raise PromptError("The prompt is empty: type at least one word, for example “the cat”.")
    unknown = [w for w in words if w not in WORDS]
    if unknown:
        listed = ", ".join(f"“{w}”" for w in dict.fromkeys(unknown))
        raise PromptError(f"The decoder only knows the words of its language, and not {listed}. "
                          f"Its vocabulary: {' '.join(WORDS)}")
    if len(words) > MAX_PROMPT:
        raise PromptError(f"The prompt has {len(words)} words; the decoder reads at most {CONTEXT} positions, so a "
                          f"prompt may have at most {MAX_PROMPT} words to leave room for one more.")
    return [TOKEN_ID[w] for w in words]


def inference_model(config: DecoderConfig, state: dict[str, torch.Tensor]) -> Decoder:
    """The decoder with the weights `state`, in float64 and evaluation mode, for writing and inspecting."""
    model = build_decoder(config)
    model.load_state_dict(state)
    return model.double().eval()


@dataclass(frozen=True)
class Written:
    """A text written from a prompt, and the choice of the word after it.

    Attributes:
        ids: the prompt's and the written words' token ids.
        n_prompt: how many of them the prompt gave.
        steps: one `NextWord` per written word, then the next word's (absent once the text has ended).
        attention: per step, ``(n_layers, H, T_k)``: the weights of the newest position's query over every
            position read so far (the prompt's last word for the first step).
        ended: True when the text reached the end token or filled the decoder's positions.
    """

    ids: tuple[int, ...]
    n_prompt: int
    steps: tuple[NextWord, ...]
    attention: tuple[np.ndarray, ...]
    ended: bool

    @property
    def words(self) -> list[str]:
        return [VOCABULARY[i] for i in self.ids]

    @property
    def pending(self) -> NextWord | None:
        """The choice of the word after the text, or None once the text has ended."""
        return None if self.ended else self.steps[-1]

    def prefix(self, n_words: int) -> Written:
        """The text as it was after its first `n_words` written words: each step depends only on the words before
        it, so writing fewer words gives exactly this."""
        n = min(n_words, len(self.ids) - self.n_prompt)
        ended = self.ended and n == len(self.ids) - self.n_prompt
        kept = n if ended else n + 1
        return Written(self.ids[: self.n_prompt + n], self.n_prompt, self.steps[:kept], self.attention[:kept], ended)


@deterministic_torch()  # one thread: a pool woken for ops this small spins on, for nothing
@torch.no_grad()
def write(model: Decoder, prompt: Sequence[int], sampling: Sampling, seed: int, n_words: int) -> Written:
    """Write up to `n_words` words after `prompt`, then choose (without writing) the one after them."""
    ids, caches = list(prompt), model.new_caches()
    new = torch.tensor([ids])  # (1, T_prompt): the prompt is read in one pass
    steps: list[NextWord] = []
    attention: list[np.ndarray] = []
    while True:
        logits, maps = model(new, caches)  # (1, T_new, V), (1, L, H, T_new, T_k)
        attention.append(maps[0, :, :, -1].numpy())  # (L, H, T_k): the newest position's query
        words_only = logits[0, -1, :PAD_ID].numpy()  # (V - 1,): the padding token is never written
        step = next_word(words_only, sampling, draw_for(seed, len(ids)))
        steps.append(step)
        if len(steps) > n_words or ids[-1] == END_ID or len(ids) >= CONTEXT:
            break
        ids.append(step.choice)
        new = torch.tensor([[step.choice]])  # (1, 1): only the newest word is read
    ended = ids[-1] == END_ID or len(ids) >= CONTEXT
    if ended:
        steps.pop()
        attention.pop()
    return Written(tuple(ids), len(prompt), tuple(steps), tuple(attention), ended)


@deterministic_torch()  # one thread: a pool woken for ops this small spins on, for nothing
@torch.no_grad()
def text_pass(model: Decoder, ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """One masked pass over a text: every position's next-word logits ``(T, V)`` and every layer's and head's
    attention ``(n_layers, H, T, T)``."""
    logits, maps = model(torch.tensor([list(ids)]))  # (1, T, V), (1, L, H, T, T)
    return logits[0].numpy(), maps[0].numpy()


@deterministic_torch()  # one thread: a pool woken for ops this small spins on, for nothing
@torch.no_grad()
def every_way(model: Decoder, ids: Sequence[int], only: str | None = None) -> dict[str, np.ndarray]:
    """The next-word logits ``(T, V)`` at every position of `ids`, computed three ways that must agree:

    * ``"whole"``: the whole text in one masked pass (how the decoder is trained);
    * ``"cached"``: one word at a time with the key-value cache (how `write` writes);
    * ``"recomputed"``: one word at a time, reading the whole text so far again at every step.

    `only` names one of them, to compute (and time) that one alone.
    """
    x = torch.tensor([list(ids)])  # (1, T)

    def cached() -> torch.Tensor:
        caches = model.new_caches()
        return torch.cat([model(x[:, t : t + 1], caches)[0][0] for t in range(x.shape[1])])  # T x (1, V) -> (T, V)

    ways = {
        "whole": lambda: model(x)[0][0],  # (T, V)
        "cached": cached,
        "recomputed": lambda: torch.cat([model(x[:, : t + 1])[0][0, -1:] for t in range(x.shape[1])]),  # (T, V)
    }
    return {name: way().numpy() for name, way in ways.items() if only in (None, name)}


def median_seconds(model: Decoder, ids: Sequence[int], way: str, repeats: int = 5) -> float:
    """Wall time of computing `ids`' logits one `way` of `every_way`, the median of `repeats` runs."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        every_way(model, ids, only=way)
        times.append(time.perf_counter() - start)
    return float(np.median(times))
