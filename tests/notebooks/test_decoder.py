"""The decoder page's notebook, downloaded at real links (trained on the page, and untrained) and run on one thread:
it makes the language, trains the page's run again to its losses at every step and checkpoint, scores the same
baselines, and writes the page's text with the same next-word probabilities."""

from __future__ import annotations

import json

import numpy as np
import pytest

from decoder.baselines import quality
from decoder.config import CONTEXT, DecoderConfig
from decoder.language import split
from decoder.sampling import Sampling, next_word
from decoder.trainer import DecoderTrainer, train_decoder
from decoder.writing import WORDS, inference_model, prompt_ids, write
from notebooks import build_notebook, settings_of
from notebooks.decoder import CONTEXT as NOTEBOOK_CONTEXT
from notebooks.decoder import WORDS as NOTEBOOK_WORDS
from notebooks.values import NotWritableError
from tests.helpers.notebooks import (NOTEBOOK, assert_close, download, page_and_notebook, recorded_downloads,
                                     run_notebook)
from ui.shared_runs import shared_runs

PAGE = "app_pages/decoder.py"
#: The loss's tolerance: the notebook's run against the page's.
LOSS_ATOL = 0.0
LINKS = [
    ({"steps": "100"}, ("train",)),
    ({"steps": "100", "layers": "1", "heads": "4", "seed": "5", "prompt": "the dogs", "temp": "0.5", "top_k": "3",
      "top_p": "0.5", "draw": "5", "words": "3"}, ("train",)),
    ({"steps": "100", "heads": "1", "seed": "2"}, ()),
]

#: A view of the page, as the notebook's settings.
VIEW = {"n_layers": 2, "n_heads": 2, "steps": 100, "seed": 0, "d_model": 32, "lr": 1e-2, "batch": 32,
        "held_out_share": 0.2, "n_checkpoints": 16, "prompt": ["the", "cat"], "temperature": 1.0, "top_k": 0,
        "top_p": 1.0, "draw_seed": 0, "n_words": 0}


def config_of(query: dict[str, str]) -> DecoderConfig:
    return DecoderConfig(n_layers=int(query.get("layers", 2)), n_heads=int(query.get("heads", 2)),
                         steps=int(query.get("steps", 500)), seed=int(query.get("seed", 0)))


@pytest.mark.parametrize(("link", "press"), LINKS, ids=["100 steps, trained", "1 layer, 4 heads, seed 5, "
                                                        "written at τ 0.5, top-k 3, top-p 0.5", "1 head, untrained"])
def test_the_notebook_trains_the_page_s_run_again_and_writes_its_text(kernel, link, press):
    at, name, text = page_and_notebook(PAGE, press=press, **link)
    assert name == "decoder.ipynb"
    config = config_of(link)
    run = shared_runs("decoder", DecoderTrainer, 8).existing(config).result if press else train_decoder(config)
    found = run_notebook(text, kernel, ["train_loss", "checkpoint_steps", "held_out_loss", "held_out_accuracy",
                                        "baselines", "ids", "pending"])
    assert found["checkpoint_steps"] == run.checkpoint_steps and len(found["train_loss"]) == config.steps
    assert_close(found, {"train_loss": run.train_loss, "held_out_loss": [s.loss for s in run.held_out],
                         "held_out_accuracy": [s.accuracy for s in run.held_out]}, atol=LOSS_ATOL)
    model = inference_model(config, run.state)
    q = quality(model, split(config.held_out_share, config.seed))
    assert_close({"b": found["baselines"]["bigram"], "g": found["baselines"]["grammar"]},
                 {"b": [q.bigram.loss, q.bigram.accuracy], "g": [q.grammar.loss, q.grammar.accuracy]})
    # the text as the page writes it: to the end at these settings, then the words shown
    trained = bool(press)
    prompt = link.get("prompt", "the cat").split() if trained else ["the", "cat"]
    sampling = Sampling(float(link.get("temp", 1.0)), int(link.get("top_k", 0)), float(link.get("top_p", 1.0))) \
        if trained else Sampling()
    draw = int(link.get("draw", 0)) if trained else 0
    whole = write(model, prompt_ids(prompt), sampling, draw, CONTEXT - len(prompt))
    shown = whole.prefix(int(link.get("words", 0)) if trained else 0)
    assert found["ids"] == list(shown.ids)
    step = shown.pending
    assert (found["pending"] is None) == (step is None)
    if step is not None:
        assert found["pending"]["choice"] == step.choice
        assert_close(found["pending"], {"logits": step.logits, "probs": step.probs, "final": step.final})


@pytest.mark.parametrize("change", [{"prompt": ["the", "cow"]}, {"prompt": ["<pad>"]}, {"prompt": []},
                                    {"n_heads": 3}, {"top_p": 0.0}, {"temperature": float("nan")}])
def test_a_view_the_page_cannot_write_is_not_written(change):
    assert settings_of("decoder", VIEW)["prompt"] == ["the", "cat"]
    with pytest.raises(NotWritableError):
        settings_of("decoder", {**VIEW, **change})


def test_the_notebook_s_sampling_chooses_as_the_page_does_at_every_setting():
    """The notebook's sampling cell (NumPy alone, run here) against `decoder.sampling.next_word`: random logits at
    every temperature, top-k and top-p the page offers, with ties, far outliers and masses that reach p exactly."""
    nb = build_notebook("decoder", settings_of("decoder", VIEW))
    (cell,) = [c.source for c in nb.cells if c.cell_type == "code" and "def next_word(" in c.source]
    namespace = {"np": np}
    exec(compile(cell, "sampling cell", "exec"), namespace)
    rng = np.random.default_rng(0)
    for case in range(600):
        z = rng.normal(0, (0.1, 1, 5, 50)[case % 4], size=32)
        if case % 5 == 0:
            z[rng.integers(32, size=3)] = z.max()  # ties at the top
        if case % 7 == 0:
            z = np.zeros(20)  # twenty equal words: p = 0.05 keeps one, however the float sums round
        sampling = Sampling(float(rng.choice([0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0])),
                            int(rng.integers(0, 11)), float(rng.choice(np.arange(1, 21) / 20)))
        draw = float(rng.random())
        page, notebook = next_word(z, sampling, draw), namespace["next_word"](z, *vars(sampling).values(), draw)
        assert notebook["choice"] == page.choice, (case, sampling)
        for name in ("probs", "final", "cut_by_k", "cut_by_p"):
            np.testing.assert_array_equal(notebook[name], getattr(page, name), err_msg=f"{name}, case {case}")


def test_the_prompt_s_check_knows_the_language_s_words_and_positions():
    assert NOTEBOOK_WORDS == set(WORDS) and NOTEBOOK_CONTEXT == CONTEXT


def test_a_prompt_the_page_refused_is_named_and_the_last_valid_one_written():
    """Trained, a prompt with a word outside the language is refused on the page: the notebook writes after the
    last valid prompt, as the page does, and says in its note that the prompt typed could not be read."""
    at, _, _ = page_and_notebook(PAGE, press=("train",), steps="100", prompt="the dogs")
    with recorded_downloads() as files:
        at.text_input(key="prompt").set_value("the cow").run()
        assert not at.exception and any("cow" in e.value for e in at.error)
        _, text = download(at, files, NOTEBOOK)
    cells = ["".join(c["source"]) for c in json.loads(text)["cells"]]
    assert any(c.startswith("> **Note:**") and "the prompt typed could not be read" in c for c in cells)
    assert "prompt = ['the', 'dogs']" in "\n".join(cells)
