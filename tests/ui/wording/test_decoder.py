"""The decoder page's sentences: every number they quote is the one computed from the result they are given."""

import numpy as np
import pytest

from decoder.baselines import Quality
from decoder.config import DecoderConfig
from decoder.cost import step_costs
from decoder.sampling import Sampling, next_word
from decoder.trainer import DecoderRun, Scores
from decoder.writing import WORDS
from ui.wording import decoder as wording

QUALITY = Quality(model=Scores(0.9, 0.61), bigram=Scores(1.2, 0.5), grammar=Scores(0.7, 0.66), context_words=40,
                  model_context=0.875, bigram_context=0.4)


def logits_favouring(word: str, others: float = 0.0) -> np.ndarray:
    z = np.full(len(WORDS), others)
    z[WORDS.index(word)] = 4.0
    return z


def test_the_model_size_quotes_the_config_and_the_count():
    text = wording.model_size(DecoderConfig(n_heads=4, steps=800, seed=3), 12_345)
    assert text.startswith("12,345 trainable numbers: d_model = 32, d_k = 8,")
    assert "batches of 32 sentences, 800 times" in text


def test_the_quality_metrics_and_their_help_quote_each_predictor():
    metrics = {label: (value, help_) for label, value, help_ in wording.quality_metrics(QUALITY, 2.5, 1.7)}
    assert metrics["Held-out perplexity"][0] == f"{np.exp(0.9):.2f}"
    assert f"{np.exp(1.2):.2f}" in metrics["Held-out perplexity"][1]
    assert f"{np.exp(0.7):.2f}" in metrics["Held-out perplexity"][1]
    assert metrics["Held-out next-word accuracy"] == ("61.0%", "Bigram 50.0%, grammar 66.0%: many next words are a "
                                                      "free choice of the language, so nothing gets them all.")
    assert metrics["Words that need context"][0] == "87.5%"
    assert "The 40 held-out words" in metrics["Words that need context"][1]
    assert metrics["Training time"] == ("2.5 s", "Wall time on this server; 1.7 s of CPU in the training thread.")


def test_the_perplexity_caption_orders_decoder_bigram_grammar():
    text = wording.perplexity(QUALITY)
    assert (f"this decoder's is {np.exp(0.9):.2f}, the best bigram model's {np.exp(1.2):.2f}, and the grammar's own "
            f"{np.exp(0.7):.2f}") in text


def test_the_final_losses_are_the_run_s_last_checkpoint():
    run = DecoderRun(DecoderConfig(steps=500), checkpoint_steps=[0, 250, 500],
                     held_out=[Scores(3.4, 0.1), Scores(1.1, 0.5), Scores(0.95, 0.6)])
    assert wording.final_losses(run, QUALITY) == "Held-out loss 0.950 at step 500; bigram 1.200, grammar 0.700."


@pytest.mark.parametrize("temperature, how", [(0.0, "greedy: at τ = 0"), (1.0, "uniform draw 0.250 from the seed")])
def test_the_word_drawn_says_how_it_was_drawn(temperature, how):
    step = next_word(logits_favouring("dog"), Sampling(temperature), 0.25)
    text = wording.word_drawn(step, Sampling(temperature))
    assert text.startswith(f"Next word drawn: **{WORDS[step.choice]}** ({how}")
    assert text.endswith("Nothing likely was cut off.")
    assert wording.likeliest_and_drawn(step) == (f"Likeliest “dog” at {step.probs.max():.2f}; "
                                                 f"drawn: “{WORDS[step.choice]}”.")


def test_only_likely_words_cut_off_are_named():
    z = logits_favouring("dog", others=-20.0)
    z[WORDS.index("cat")] = 3.0  # likely, cut by top-k = 1; every other word is far below NAMED_CUT
    step = next_word(z, Sampling(1.0, top_k=1), 0.5)
    assert step.probs[WORDS.index("cat")] >= wording.NAMED_CUT
    assert wording.word_drawn(step, Sampling(1.0, top_k=1)).endswith("Cut off: cat.")


def test_where_the_last_word_looks_names_each_layer_and_head_s_largest_weight():
    ids = [WORDS.index(w) for w in ("the", "cat", "sleeps")]
    maps = np.zeros((2, 2, 3, 3))
    maps[0, 0, -1, 1] = maps[0, 1, -1, 0] = maps[1, 0, -1, 2] = maps[1, 1, -1, 1] = 1.0
    assert wording.where_the_last_word_looks(maps, ids) == (
        "The last word “sleeps” looks most at layer 1 head 1: “cat”; layer 1 head 2: “the”; layer 2 head 1: "
        "“sleeps”; layer 2 head 2: “cat”.")


def test_the_cache_totals_sum_every_step_and_their_ratio():
    costs = step_costs(DecoderConfig(), 2, 6)
    with_cache, without = sum(c.with_cache for c in costs), sum(c.without_cache for c in costs)
    assert without > with_cache
    assert wording.cache_totals(costs).startswith(
        f"In all: {with_cache:,} multiply-adds with the cache, {without:,} without ({without / with_cache:.1f} times")


def test_the_cache_timings_quote_the_medians_and_the_largest_differences():
    whole = np.zeros((3, 4))
    ways = {"whole": whole, "cached": whole + 2e-15, "recomputed": whole - 3e-16}
    text = wording.cache_timings({"cached": 0.00125, "recomputed": 0.0031}, ways, 3)
    assert text.startswith("Median of 5: 1.25 ms with the cache, 3.10 ms without, for 3 positions")
    assert text.endswith("max |cached − one pass| = 2.0e-15, max |recomputed − one pass| = 3.0e-16.")


def test_the_quiz_answer_quotes_the_drawn_word_s_and_the_likeliest_word_s_probabilities():
    cold = next_word(logits_favouring("dog"), Sampling(0.1), 0.5)
    assert wording.cold_answer(cold).startswith(f"“dog”, drawn with probability {cold.final[cold.choice]:.1%}")
    assert f"“dog”, takes {cold.probs.max():.1%} of the probability" in wording.cold_answer(cold)
