"""Training at the defaults (the page's) reaches the stated quality against the bigram and the grammar, reproducibly."""

import pytest

from decoder.baselines import quality
from decoder.config import DecoderConfig
from decoder.language import split
from decoder.trainer import DecoderTrainer, train_decoder
from decoder.writing import inference_model

DEFAULT = DecoderConfig()


@pytest.fixture(scope="module")
def default_run():
    return train_decoder(DEFAULT)


def test_the_defaults_beat_the_best_bigram_and_come_close_to_the_grammar(default_run):
    q = quality(inference_model(DEFAULT, default_run.state), split(DEFAULT.held_out_share, DEFAULT.seed))
    assert q.model.perplexity < 0.75 * q.bigram.perplexity
    assert q.model.perplexity <= 1.06 * q.grammar.perplexity  # the grammar's is the least possible
    assert q.model.accuracy > q.bigram.accuracy
    assert q.context_words > 100
    assert q.model_context >= 0.99 > 0.75 > q.bigram_context


def test_a_run_is_reproducible_however_it_is_chunked():
    config = DecoderConfig(steps=30, n_checkpoints=3)
    whole = DecoderTrainer(config).run()
    chunked = DecoderTrainer(config)
    while not chunked.result.complete:
        chunked.run(max_seconds=0.0)  # one step per call
    assert chunked.result.train_loss == whole.train_loss
    assert [s.loss for s in chunked.result.held_out] == [s.loss for s in whole.held_out]


def test_quality_runs_the_model_once_and_takes_the_grammar_it_is_given(monkeypatch):
    """The held-out logits serve both the scores and the words that need context; a grammar at hand (the same for
    every corpus) is used rather than built again."""
    import decoder.baselines as baselines

    config = DecoderConfig(steps=5, n_checkpoints=1)
    model, corpus = inference_model(config, train_decoder(config).state), split(config.held_out_share, config.seed)
    built = quality(model, corpus)
    grammar = baselines.grammar_predictor()
    passes = []
    model.register_forward_hook(lambda *_: passes.append(1))
    monkeypatch.setattr(baselines, "grammar_predictor", lambda: pytest.fail("the grammar was built again"))
    assert quality(model, corpus, grammar) == built
    assert len(passes) == 1
