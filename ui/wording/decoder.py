"""The decoder page's sentences that quote its numbers: the model's size, the held-out perplexities, the word drawn
and what was cut off, where the last word looked, the cache's work counted and timed, and the quiz's answer, each
computed from the `decoder` result on screen."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from decoder.baselines import Quality
from decoder.config import CONTEXT, DecoderConfig
from decoder.cost import StepCost
from decoder.sampling import NextWord, Sampling
from decoder.trainer import DecoderRun
from decoder.writing import WORDS

#: A word cut off by top-k or top-p is named only if the softmax gave it at least this probability.
NAMED_CUT = 0.005


def model_size(config: DecoderConfig, n_parameters: int) -> str:
    """The decoder's trainable numbers, its widths and how it is trained."""
    return (f"{n_parameters:,} trainable numbers: d_model = {config.d_model}, "
            f"d_k = {config.d_model // config.n_heads}, {CONTEXT} positions; Adam at learning rate {config.lr:g} on "
            f"batches of {config.batch} sentences, {config.steps} times. Same settings and seed, same run.")


def final_losses(run: DecoderRun, q: Quality) -> str:
    """The loss chart's numbers: the run's last held-out loss and its step, and the bigram's and grammar's losses."""
    return (f"Held-out loss {run.held_out[-1].loss:.3f} at step {run.checkpoint_steps[-1]}; bigram "
            f"{q.bigram.loss:.3f}, grammar {q.grammar.loss:.3f}.")


def quality_metrics(q: Quality, elapsed_s: float, cpu_s: float) -> list[tuple[str, str, str]]:
    """``(label, value, help)`` of each metric of a trained run: the decoder's held-out perplexity, accuracy and
    accuracy on the words that need context, each beside the bigram's and the grammar's, and its training time."""
    return [
        ("Held-out perplexity", f"{q.model.perplexity:.2f}",
         f"exp(loss): the best bigram model gets {q.bigram.perplexity:.2f}, the grammar itself "
         f"{q.grammar.perplexity:.2f}, the least anything can."),
        ("Held-out next-word accuracy", f"{q.model.accuracy:.1%}",
         f"Bigram {q.bigram.accuracy:.1%}, grammar {q.grammar.accuracy:.1%}: many next words are a free choice of the "
         "language, so nothing gets them all."),
        ("Words that need context", f"{q.model_context:.1%}",
         f"The {q.context_words} held-out words the grammar fixes but the previous word does not (it/they, the sound, "
         f"sleeps/sleep). The best bigram gets {q.bigram_context:.1%}."),
        ("Training time", f"{elapsed_s:.1f} s",
         f"Wall time on this server; {cpu_s:.1f} s of CPU in the training thread."),
    ]


def perplexity(q: Quality) -> str:
    """What perplexity is, with the held-out perplexities of the decoder, the best bigram model and the grammar."""
    return (f"**Perplexity** is exp(loss): a model as unsure, on average, as a fair choice among N words has "
            f"perplexity N. Held out, this decoder's is {q.model.perplexity:.2f}, the best bigram model's "
            f"{q.bigram.perplexity:.2f}, and the grammar's own {q.grammar.perplexity:.2f}, the least anything can "
            "reach.")


def likeliest_and_drawn(step: NextWord) -> str:
    """The next-word chart's numbers: the likeliest word and its probability, and the word drawn."""
    return f"Likeliest “{WORDS[int(np.argmax(step.probs))]}” at {step.probs.max():.2f}; drawn: “{WORDS[step.choice]}”."


def word_drawn(step: NextWord, sampling: Sampling) -> str:
    """The word `step` drew and how (greedy at τ = 0, else its uniform draw), and the likely words cut off."""
    cut = [WORDS[i] for i in np.flatnonzero(step.cut_by_k | step.cut_by_p) if step.probs[i] >= NAMED_CUT]
    how = ("greedy: at τ = 0 the likeliest word is always taken" if sampling.temperature == 0
           else f"uniform draw {step.draw:.3f} from the seed")
    return (f"Next word drawn: **{WORDS[step.choice]}** ({how}). "
            + (f"Cut off: {', '.join(cut)}." if cut else "Nothing likely was cut off."))


def where_the_last_word_looks(maps: np.ndarray, ids: Sequence[int]) -> str:
    """For every layer and head of `maps` ``(L, H, T, T)``, the word the text's last word weighs most."""
    newest = maps[:, :, -1, :]  # (L, H, T): the last word's query over every word
    return f"The last word “{WORDS[ids[-1]]}” looks most at " + "; ".join(
        f"layer {layer + 1} head {h + 1}: “{WORDS[ids[int(np.argmax(newest[layer, h]))]]}”"
        for layer in range(newest.shape[0]) for h in range(newest.shape[1])) + "."


def cache_totals(costs: Sequence[StepCost]) -> str:
    """The multiply-adds of every step summed, with the cache and without, and their ratio."""
    with_cache, without = sum(c.with_cache for c in costs), sum(c.without_cache for c in costs)
    return (f"In all: {with_cache:,} multiply-adds with the cache, {without:,} without "
            f"({without / with_cache:.1f} times as many). Matrix products only; counted per pass as "
            "`pass_multiply_adds`, checked against PyTorch's own count.")


def cache_timings(seconds: Mapping[str, float], ways: Mapping[str, np.ndarray], n_positions: int) -> str:
    """The median times of writing the logits with the cache and without, and how far each way's logits are from
    the one masked pass's (`decoder.writing.every_way`)."""
    return (f"Median of 5: {seconds['cached'] * 1e3:.2f} ms with the cache, {seconds['recomputed'] * 1e3:.2f} ms "
            f"without, for {n_positions} positions (a text this short is dominated by PyTorch's fixed cost per call; "
            "the count above is what grows). The logits agree: max |cached − one pass| = "
            f"{np.abs(ways['cached'] - ways['whole']).max():.1e}, max |recomputed − one pass| = "
            f"{np.abs(ways['recomputed'] - ways['whole']).max():.1e}.")


def cold_answer(cold: NextWord) -> str:
    """The quiz's explanation: the word drawn at τ = 0.1, its probability, and the likeliest word's share."""
    return (f"“{WORDS[cold.choice]}”, drawn with probability {cold.final[cold.choice]:.1%}: at τ = 0.1 the logits "
            "are multiplied by 10 before the softmax, so the likeliest word, "
            f"“{WORDS[int(np.argmax(cold.probs))]}”, takes {cold.probs.max():.1%} of the probability.")
