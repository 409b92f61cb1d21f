"""AppTests of app_pages/decoder.py: trains once per server, writes what `decoder.writing` writes, refuses bad
input with a message, round-trips every control through the link, and never retrains for a sampling knob."""

import re
import time

import numpy as np
import pytest

from decoder.config import CONTEXT, DecoderConfig
from decoder.sampling import Sampling, draw_for, next_word
from decoder.trainer import DecoderTrainer
from decoder.writing import WORDS, inference_model, prompt_ids, write
from tests.helpers.apptest import chart_specs, open_code, section_titles
from tests.helpers.registry import MALFORMED, NO_NUMBERS, VALID, Case, PageTests
from ui.shared_runs import shared_runs

PAGE = "app_pages/decoder.py"
SHORT = {"steps": "100"}
SHORT_CONFIG = DecoderConfig(steps=100)
TIMEOUT = 300  # a loaded machine trains slowly; the time is not what these tests check
IN_LINE_S = 60  # a bound on the wait for a pressed Train to reach the line; nothing is timed
#: A link that sets every control of the writing section to a value other than its default.
LINK = {**SHORT, "prompt": "the dogs", "temp": "0.5", "top_k": "3", "top_p": "0.5", "draw": "5", "words": "3"}


def open_page(**query: str):
    from streamlit.testing.v1 import AppTest

    from tests.helpers.apptest import APP

    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.switch_page(PAGE)
    at.query_params.update(query)
    return at.run()


@pytest.fixture(scope="module")
def trained():
    """The short run, trained through the page once for this test process (the server's shared runs)."""
    at = open_page(**SHORT)
    if at.button(key="train").label == "Train":
        at.button(key="train").click().run()
    assert not at.exception
    return inference_model(SHORT_CONFIG, shared_runs("decoder", DecoderTrainer, 8).existing(SHORT_CONFIG).result.state)


def next_word_table(at):
    """The next word's bar chart's table: one row per likely word, the most likely first."""
    frames = next(frames for spec, frames in chart_specs(at) if "final" in str(spec))
    return next(iter(frames.values()))


def text_shown(at) -> str:
    line = next(m.value for m in at.markdown if m.value.startswith("Text: "))
    return line.removeprefix("Text: ").split(" —")[0].removesuffix(" …").replace("**", "")


def test_untrained_the_page_describes_its_language_and_offers_training():
    at = open_page(steps="1200", seed="97")
    assert not at.exception
    assert at.button(key="train").label == "Train"
    assert any("The vocabulary, 32 words" in c.value for c in at.caption)
    assert any("Not trained yet" in i.value for i in at.info)
    assert open_code(at, "Show the decoder, the cache and the sampling").code


def test_the_page_s_default_setting_is_the_config_s_default():
    """A link without settings asks for `DecoderConfig()`, the run the quality tests train (tests/decoder)."""
    at = open_page()
    assert not at.exception
    assert int(at.select_slider(key="steps").value) == DecoderConfig().steps
    assert int(at.select_slider(key="layers").value) == DecoderConfig().n_layers
    assert int(at.select_slider(key="heads").value) == DecoderConfig().n_heads


def test_a_run_is_shared_by_every_session_and_a_sampling_knob_never_retrains(trained):
    runs = shared_runs("decoder", DecoderTrainer, 8)
    trainer = runs.existing(SHORT_CONFIG)
    at = open_page(**SHORT)  # a new session: the run is there, no Train press needed
    assert at.button(key="train").label == "Trained" and at.button(key="train").disabled
    steps = list(trainer.result.train_loss)
    at.select_slider(key="temp").set_value(2.0).run()
    at.slider(key="top_k").set_value(4).run()
    assert runs.existing(SHORT_CONFIG) is trainer and trainer.result.train_loss == steps
    assert not at.exception


def test_every_writing_control_is_read_from_the_link_and_used(trained):
    at = open_page(**LINK)
    assert at.text_input(key="prompt").value == "the dogs"
    assert at.select_slider(key="temp").value == 0.5 and at.slider(key="top_k").value == 3
    assert at.select_slider(key="top_p").value == 0.5 and at.slider(key="draw").value == 5
    assert at.slider(key="words").value == 3
    expected = write(trained, prompt_ids(["the", "dogs"]), Sampling(0.5, 3, 0.5), 5, 3)
    assert text_shown(at) == " ".join(expected.words)
    for key, value in (("temp", "1.0"), ("top_k", "0"), ("top_p", "1.0")):  # each knob on its own matters
        other = open_page(**{**LINK, key: value})
        assert not next_word_table(other).equals(next_word_table(at)) or text_shown(other) != text_shown(at), key
    table = next_word_table(at)
    assert np.allclose(table["p"].to_numpy(), np.sort(expected.pending.probs)[::-1][: len(table)])


def test_malformed_link_values_fall_back_with_a_notice(trained):
    at = open_page(**SHORT, temp="0.25", top_k="11", top_p="0", draw="abc", words="99", layers="3", heads="3")
    assert not at.exception
    assert at.select_slider(key="temp").value == 1.0 and at.slider(key="top_k").value == 0
    assert at.select_slider(key="top_p").value == 1.0 and at.slider(key="draw").value == 0
    assert at.slider(key="words").value == 0
    notices = " ".join(i.value for i in at.info)
    for key in ("temp", "top_k", "top_p", "draw", "words", "layers", "heads"):
        assert f"`{key}`" in notices


@pytest.mark.parametrize(("prompt", "message"), [
    ("the zebra", "not “zebra”. Its vocabulary: the small big"),
    (" ".join(["the"] * CONTEXT), "more than the 14"),
    ("", "the sentence is empty"),
])
def test_a_bad_prompt_gets_a_clear_message_and_the_last_good_prompt_is_kept(trained, prompt, message):
    at = open_page(**SHORT, prompt="the birds")
    at.text_input(key="prompt").input(prompt).run()
    assert not at.exception
    assert any(message in e.value for e in at.error)
    assert text_shown(at).startswith("the birds")


def test_next_word_appends_the_drawn_word_and_write_to_the_end_finishes(trained):
    at = open_page(**SHORT, prompt="The cat", temp="0")
    pending = write(trained, prompt_ids(["the", "cat"]), Sampling(0.0), 0, 0).pending
    at.button(key="next_word").click().run()
    assert text_shown(at).split() == ["the", "cat", WORDS[pending.choice]]
    at.button(key="write_all").click().run()
    finished = write(trained, prompt_ids(["the", "cat"]), Sampling(0.0), 0, CONTEXT)
    assert text_shown(at) == " ".join(finished.words) and finished.ended
    assert any("has ended" in c.value for c in at.caption)
    assert at.slider(key="words").value == len(finished.ids) - 2 == at.slider(key="words").max
    assert at.button(key="next_word").disabled and at.button(key="write_all").disabled  # no dead control
    at.button(key="start_over").click().run()
    assert text_shown(at) == "the cat"


def test_the_cache_table_and_the_measure_button(trained):
    at = open_page(**LINK)
    at.button(key="measure_cache").click().run()
    assert not at.exception
    measured = next(c.value for c in at.caption if "Median of 5" in c.value)
    agreements = re.findall(r"one pass\| = ([0-9.]+e[+-]?[0-9]+)", measured.replace("−", "-"))
    assert len(agreements) == 2 and all(float(x) <= 1e-12 for x in agreements)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["max weight on a later word"] == "0.0"
    assert float(metrics["max |one pass − while writing|"]) <= 1e-12


def test_every_chart_after_training_is_named_with_its_numbers_and_readable_on_a_phone(trained):
    from ui.charts.spec import MIN_FONT_PX, font_sizes

    at = open_page(**LINK)
    charts = at.get("vega_lite_chart")
    assert len(charts) == 3  # the loss curves, the next word, the attention maps
    assert all(any(ch.isdigit() for ch in c.proto.alt) for c in charts)
    assert not [size for spec, _ in chart_specs(at) for size in font_sizes(spec) if size < MIN_FONT_PX]


def test_every_chart_after_training_can_be_read_as_tables(trained):
    """Nothing only in colour or on hover: the curves, the bars and the attention maps each have their numbers
    under "Show the numbers", and the bars' table holds the probabilities the bars draw."""
    from ui.export import matrix_titles, series_tables

    at = open_page(**LINK)
    sent = [{**spec, "datasets": frames} for spec, frames in chart_specs(at)]
    untabled = [spec.get("description") for spec in sent if not matrix_titles(spec) and not series_tables(spec)]
    assert len(sent) == 3 and not untabled, f"{len(untabled)} of {len(sent)} charts have no table"
    assert any(len(matrix_titles(spec)) == 4 for spec in sent)  # 2 layers x 2 heads of attention


def test_training_lets_the_class_s_waiting_steps_go_between_its_chunks(monkeypatch):
    """A run trains in chunks; between two, every step waiting for a turn goes first (`ui.turns.next_turn`)."""
    import ui.turns

    chunks = []
    monkeypatch.setattr(ui.turns, "next_turn", lambda: chunks.append("turn"))
    at = open_page(steps="100", seed="41")  # a short setting no other test trains (the default must stay untrained)
    assert at.button(key="train").label == "Train"
    at.button(key="train").click().run()
    assert not at.exception and chunks


def test_the_grammar_s_table_is_built_once_for_every_setting(monkeypatch):
    """The grammar's next-word table depends on the language alone: two settings trained and scored, one table."""
    import decoder.baselines

    built = []
    grammar = decoder.baselines.grammar_predictor
    monkeypatch.setattr(decoder.baselines, "grammar_predictor", lambda: built.append(1) or grammar())
    for seed in ("71", "72"):  # short settings no other test trains
        at = open_page(steps="100", seed=seed)
        at.button(key="train").click().run()
        assert not at.exception and any(m.label == "Held-out perplexity" for m in at.metric)
    assert len(built) <= 1


def test_the_formula_keeps_the_temperature_out_of_the_models_probability_and_the_terms_are_defined(trained):
    """p(x_{t+1} | x_≤t) is the model's softmax(z_t); τ only shapes what is drawn. Logits, the nucleus and perplexity
    are defined in the page's text (not only in tooltips), perplexity with the held-out numbers of the metrics."""
    from decoder.baselines import quality
    from decoder.language import split

    at = open_page(**SHORT)
    assert not at.exception
    formula = " ".join(el.value for el in at.latex) + " ".join(m.value for m in at.markdown)
    assert r"p(x_{t+1} \mid x_{\le t}) = \operatorname{softmax}(z_t)" in formula
    assert r"p(x_{t+1} \mid x_{\le t}) = \operatorname{softmax}\!\left(\frac{z_t}{\tau}\right)" not in formula
    text = " ".join(m.value for m in at.markdown)
    assert "the **logits** z" in text and "the **nucleus** is kept" in text and "soft-lookup page" in text
    # a position sees itself too (the causal mask keeps the diagonal), as the maps' nonzero diagonal shows
    assert "see only itself and the words before it" in text and "up to it, itself included" in text
    q = quality(trained, split(SHORT_CONFIG.held_out_share, SHORT_CONFIG.seed))
    (perplexity,) = [c.value for c in at.caption if c.value.startswith("**Perplexity** is exp(loss)")]
    assert (f"this decoder's is {q.model.perplexity:.2f}, the best bigram model's {q.bigram.perplexity:.2f}, and "
            f"the grammar's own {q.grammar.perplexity:.2f}") in perplexity
    assert next(m.value for m in at.metric if m.label == "Held-out perplexity") == f"{q.model.perplexity:.2f}"


@pytest.mark.parametrize("prompt", [".", "the cat sat on the mat .", "The dog saw the cats ."])
def test_a_prompt_that_already_ends_the_sentence_draws_every_section(trained, prompt):
    at = open_page(**SHORT, prompt=prompt, words="3")
    assert not at.exception, [e.value for e in at.exception]
    assert text_shown(at) == prompt.lower()
    assert any("already ends the sentence" in c.value for c in at.caption)
    assert any("Take the final “.” off the prompt" in c.value for c in at.caption)
    assert not any("has ended" in c.value for c in at.caption)  # the decoder wrote nothing: no "Start over"
    assert [t for t in section_titles(at) if t[0] in "345"] == [
        "3 · Writing, one word at a time", "4 · Where each word looked", "5 · The key-value cache"]
    assert len(at.get("vega_lite_chart")) == 2  # the loss curves and the prompt's attention maps; no next word
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["max weight on a later word"] == "0.0"
    assert any("nothing was written" in c.value for c in at.caption)  # the cache section says why it has no steps
    assert not [r for r in at.radio if r.key == "quiz_decoder_next_choice"]  # no word to ask about


def test_a_typed_prompt_that_ends_the_sentence_draws_every_section(trained):
    at = open_page(**SHORT)
    at.text_input(key="prompt").input("the birds sat on the rug .").run()
    assert not at.exception, [e.value for e in at.exception]
    assert text_shown(at) == "the birds sat on the rug ."


def test_the_quiz_always_offers_its_computed_answer(trained):
    """After "the big" at sampling seed 81, the draw at τ = 0.1 lands on a word outside the four likeliest."""
    at = open_page(**SHORT, prompt="the big", draw="81")
    assert not at.exception, [e.value for e in at.exception]
    first = write(trained, prompt_ids(["the", "big"]), Sampling(1.0), 81, 0).steps[0]
    cold = next_word(first.logits, Sampling(0.1), draw_for(81, 2))
    assert WORDS[cold.choice] not in [WORDS[i] for i in np.argsort(-cold.probs, kind="stable")[:4]]
    options = at.radio(key="quiz_decoder_next_choice").options
    assert WORDS[cold.choice] in options and len(options) == 4


def test_after_an_unknown_word_then_an_over_long_prompt_the_message_names_the_prompt_written_from(trained):
    at = open_page(**SHORT, prompt="the birds")
    at.text_input(key="prompt").input("the zebra").run()
    at.text_input(key="prompt").input(" ".join(["the"] * CONTEXT)).run()
    assert not at.exception
    (message,) = [e.value for e in at.error]
    shown = re.search(r"“([^”]*)”\.?$", message).group(1)
    assert shown == "the birds" and text_shown(at).startswith(shown), message


def test_two_sessions_that_find_the_line_full_wait_their_turn_see_their_place_and_both_finish(monkeypatch):
    """The process trains `ui.work_line.AT_ONCE` runs at a time: with every slot taken, two students pressing Train
    on settings of their own wait in line, in the order they pressed, each told their place, and start as soon as
    the slots free; both runs finish, each made once."""
    import threading

    from ui import work_line
    from ui.work_line import LINE

    told: list[str] = []
    sentence = work_line.InLine.sentence
    monkeypatch.setattr(work_line.InLine, "sentence", lambda self: told.append(sentence(self)) or told[-1])
    configs = [DecoderConfig(steps=100, seed=seed) for seed in (61, 62)]
    sessions = [open_page(steps="100", seed=str(c.seed)) for c in configs]
    holders = [LINE.place(("a test's work", k), "test step", 1) for k in range(work_line.AT_ONCE)]
    places = [holder.__enter__() for holder in holders]
    assert all(place.wait(0) is None for place in places)  # every slot is the test's
    pressed = []
    try:
        for at, config in zip(sessions, configs, strict=True):
            at.button(key="train").click()
            pressed.append(threading.Thread(target=at.run, daemon=True))
            pressed[-1].start()
            deadline = time.monotonic() + IN_LINE_S
            while ("decoder", config) not in LINE.waiting() and time.monotonic() < deadline:
                time.sleep(0.05)
        assert LINE.waiting() == [("decoder", c) for c in configs]
        deadline = time.monotonic() + IN_LINE_S
        while not any("you are number 2" in t for t in told) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert any(t.startswith("Waiting in line: you are number 1") for t in told)
        assert any("you are number 2" in t and "1 waiting ahead of you" in t for t in told)
    finally:
        for holder in holders:
            holder.__exit__(None, None, None)
    for thread in pressed:
        thread.join(TIMEOUT)
    runs = shared_runs("decoder", DecoderTrainer, 8)
    for config in configs:  # a new session each: AppTest's stand-in runtime is not made for two runs at once
        at = open_page(steps="100", seed=str(config.seed))
        assert not at.exception and at.button(key="train").label == "Trained"
        assert runs.existing(config).result.complete and runs.existing(config).result.steps_done == 100
    assert LINE.waiting() == [] and LINE.training() == []


# ------------------------------------------------------------------- what the shared tests know of this page

DECODER_VALID = "tests/pages/test_decoder.py::test_every_writing_control_is_read_from_the_link_and_used"
DECODER_MALFORMED = "tests/pages/test_decoder.py::test_malformed_link_values_fall_back_with_a_notice"
SHARED = PageTests(
    probe=NO_NUMBERS,  # untrained: its numbers are this module's tests'
    valid=[Case("decoder", dict(layers="1", heads="4", steps="1200", seed="5", present="true"),
                dict(layers=1, heads=4, steps=1200, seed=5, present=True))],
    malformed=[Case("decoder", dict(layers="3", heads="3", steps="7", seed="abc", present="maybe"),
                    dict(layers=2, heads=2, steps=500, seed=0, present=False))],
    elsewhere={
        ("prompt", VALID): (DECODER_VALID,),
        ("prompt", MALFORMED): (
            "tests/pages/test_decoder.py::test_a_bad_prompt_gets_a_clear_message_and_the_last_good_prompt_is_kept",),
        **{(key, kind): (DECODER_VALID if kind == VALID else DECODER_MALFORMED,)
           for key in ("temp", "top_k", "top_p", "draw", "words") for kind in (VALID, MALFORMED)},
    },
    presenter_text="The lesson ends with this",
)
