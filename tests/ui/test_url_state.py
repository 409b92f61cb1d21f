"""Every URL-bound control on every page survives a link: a valid value is shown and used, a bad one falls back.

A link is public API (slides and handouts carry them), so for every page of the router and every query key
it reads, two things are checked:

* **valid**: the page opened with a non-default value shows that value in its widget, computes with it (a
  number or chart changes to what `core` gives for that value, not to what it gives for the default), shows
  no notice, and the sidebar's link carries the value on;
* **malformed**: the page opened with a value it cannot use (``seed=abc``, ``heads=7`` with ``d_model=16``, a
  10,000-character sentence, an out-of-range number) raises nothing, the widget falls back to a valid value,
  the page computes with that value, and the page says so: the router's notice (``The link's value for `key`
  could not be used here ...``) or, for free text, the page's own error.

The keys of each page are read from its source (`tests.ui.url_keys`), so a new URL-bound control without a
case here, or without a pointer to the test that already covers it (`ELSEWHERE`), fails
`test_every_url_key_of_every_page_has_both_round_trips`. Each run also checks that every bound widget it
finds was seen by that reading. How a page's numbers are read, and what `core` says they must be for a link's
values, is the page's `Probe` (`tests.ui.page_probes`).

One AppTest run per case. To keep the file fast, the independent keys of a page share one link per kind;
each key's widget, notice and link are still checked one by one, and each valid value must matter on its
own: what `core` gives with that key put back to its default differs from what the page must show.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from devtools.appserver import ROOT
from tests.helpers.apptest import APP, TIMEOUT, share_link
from tests.ui.page_probes import (
    COST_ARCHS,
    PRETRAINED_DEFAULT_TEXT,
    PROBES,
    SHORT_RUN,
    TRAINED,
    TRAINING_DEFAULTS,
    Probe,
    assert_presenter_mode,
    permutation_shown,
    trained_session,
)
from tests.ui.url_keys import PAGES, page_keys
from ui.url_state import QUERY_KEYS

VALID, MALFORMED = "valid", "malformed"
#: The router's notice for a link value a page could not use (streamlit_app.py).
NOTICE = re.compile(r"The link's value for `(\w+)` could not be used here, "
                    r"so the page opened with `(.*)` instead\.", re.S)


# ------------------------------------------------------------------------------- running and reading a link


def bound_widgets(at: AppTest) -> dict[str, Any]:
    """Every widget on the page bound to the URL, by its query key (read from the widget's own message)."""
    found: dict[str, Any] = {}

    def walk(node: Any) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None and "query_param_key" in getattr(proto.DESCRIPTOR, "fields_by_name", {}):
            if proto.query_param_key:
                found[proto.query_param_key] = node
        children = getattr(node, "children", None)
        if isinstance(children, dict):
            for child in children.values():
                walk(child)

    walk(at._tree)
    return found


def widget_value(widget: Any) -> Any:
    """What a bound widget shows: its value, or for an expander whether it is open."""
    return widget.proto.expanded if type(widget).__name__ == "Expander" else widget.value


def link_notices(at: AppTest) -> dict[str, str]:
    """The router's fallback notices: ``{key: the value shown instead}``."""
    return {m.group(1): m.group(2) for info in at.info if (m := NOTICE.fullmatch(info.value))}



def url_form(key: str, value: str | list[str]) -> str:
    return urllib.parse.urlencode({key: value}, doseq=True)


def same(a: Any, b: Any) -> bool:
    """Equality of nested tuples, lists and dicts of numbers, strings and arrays (arrays to 1e-9)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if a is None or b is None:
        return a is b
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        return a.shape == b.shape and np.allclose(a, b, rtol=0, atol=1e-9)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b

# ------------------------------------------------------------------------------------------------ the cases


@dataclass(frozen=True)
class Case:
    """One link, opened with one AppTest run.

    `widgets`: what each bound widget must show; `uses`: parameters of the page's `Probe` that are not
    widgets or that differ from what the widget shows (free text the page refused); `error`: for a
    malformed link, text of the page's own message, for input the widget accepts but the page cannot use
    (every other key must be named by the router's link notice); `covers`: the keys whose round trip this
    case checks (default: every key of the query).
    """

    page: str
    query: Mapping[str, str | list[str]]
    widgets: Mapping[str, Any] = field(default_factory=dict)
    uses: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None
    covers: tuple[str, ...] = ()
    probe: Probe | None = None
    session: Callable[[], dict[str, Any]] | None = None
    timeout: float = TIMEOUT
    id: str = ""

    @property
    def keys(self) -> tuple[str, ...]:
        return self.covers or tuple(self.query)

    def run(self) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=self.timeout)
        at.switch_page(PAGES[self.page].file)
        at.query_params.update(dict(self.query))
        for key, value in (self.session() if self.session else {}).items():
            at.session_state[key] = value
        return at.run()


SHORT_LINK = {k: str(v) for k, v in SHORT_RUN.items()}
TEN_THOUSAND_CHARACTERS = "w " * 5000  # 5,000 words
MODEL_LOAD = 600  # seconds: the pretrained page loads its model on the first visit (slow on a busy machine)
LLAMA = "Llama-2-7B (32 layers × 32 heads)"

# One case per page and kind where the page's keys are independent (each widget, notice and number is
# still checked key by key); a separate case where one key's valid range depends on another's value.
VALID_CASES = [
    Case("soft_lookup", {"query": "sour", "temp": "1", "present": "true"},  # "1": the form the app writes for 1.0
         {"query": "sour", "temp": 1.0, "present": True}),
    # tokens and X are not widgets: the link fills the "own input" table (st.data_editor) and every matrix
    Case("worked_example", {"tokens": "a b c", "check": "true", "present": "true"}, {"check": True, "present": True},
         uses={"tokens": ("a", "b", "c")}),
    Case("worked_example", {"X": "1,0;0,1;1,1"}, uses={"X": np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])}),
    Case("worked_example", {"weights": "designed", "reveal": "softmax"}, {"weights": "designed", "reveal": "softmax"}),
    Case("scaled_attention", {"seed": "7", "seq_len": "20", "d_k": "256", "scaled": "false", "present": "true"},
         {"seed": 7, "seq_len": 20, "d_k": 256, "scaled": False, "present": True}),
    Case("multi_head", {"present": "true"}, {"present": True}),
    # a new sentence brings its own default permutation, so text and perm are checked apart
    Case("permutation", {"text": "a b c", "present": "true"}, {"text": "a b c", "perm": "2,0,1", "present": True},
         covers=("text", "present")),
    Case("permutation", {"seed": "99", "perm": "1,0,2,3,4,5"}, {"seed": 99, "perm": "1,0,2,3,4,5"}),
    Case("positional_encoding", {"dims": ["3", "5"], "present": "true"}, {"dims": [3, 5], "present": True}),
    Case("masked_attention", {"seed": "99", "seq_len": "9", "causal": "false", "present": "true"},
         {"seed": 99, "seq_len": 9, "causal": False, "present": True}),
    Case("cross_attention", {"src": "the dog barked", "tgt": "le chien", "present": "true"},
         {"src": "the dog barked", "tgt": "le chien", "present": True}),
    Case("exercise", {"present": "true"}, {"present": True}),
    Case("decoder", dict(layers="1", heads="4", steps="1200", seed="5", present="true"),
         dict(layers=1, heads=4, steps=1200, seed=5, present=True)),
    # Before training, every setting shows in the description of the model; a link with a trained run's
    # settings opens on that run (so steps, lr and seed are used), at the linked checkpoint, on the linked digits.
    Case("training", dict(task="sort", pos="learned", seq_len="5", vocab="6", d_model="64", heads="8", layers="2",
                          present="true"),
         dict(task="sort", pos="learned", seq_len=5, vocab=6, d_model=64, heads=8, layers=2, present=True)),
    Case("training", {**SHORT_LINK, "ckpt": "20", "digits": "3 0 1 2"},
         {**SHORT_RUN, "ckpt": 20, "digits": "3 0 1 2"}, covers=("steps", "lr", "seed", "ckpt", "digits"),
         probe=TRAINED, session=trained_session, id="training-trained-run"),
    Case("pretrained", {"text": "The dog ran home", "layer": "3", "head": "7", "present": "true"},
         {"text": "The dog ran home", "layer": 3, "head": 7, "present": True}, timeout=MODEL_LOAD),
    Case("attention_cost", {"arch": LLAMA, "present": "true"}, {"arch": LLAMA, "present": True}),
]

MALFORMED_CASES = [
    Case("soft_lookup", {"query": "bitter", "temp": "0.03", "present": "maybe"},  # 0.03: between two stops
         {"query": "sweet", "temp": 0.2, "present": False}),
    Case("worked_example", {"reveal": "7", "check": "maybe", "present": "1"},  # 7: QUERY_KEYS' old numeric form
         {"reveal": "output", "check": False, "present": False}),
    Case("worked_example", {"weights": "trained"}, {"weights": "random"}),
    Case("scaled_attention", {"seed": "abc", "seq_len": "99", "d_k": "3", "scaled": "perhaps", "present": "maybe"},
         {"seed": 0, "seq_len": 8, "d_k": 64, "scaled": True, "present": False}),
    Case("multi_head", {"seed": "-1", "d_model": "5", "seq_len": "1", "present": "maybe"},
         {"seed": 0, "d_model": 16, "heads": 4, "seq_len": 6, "present": False}, covers=("seed", "d_model", "seq_len",
                                                                                      "present")),
    Case("multi_head", {"d_model": "16", "heads": "7"}, {"d_model": 16, "heads": 4}, covers=("heads",)),
    Case("multi_head", {"d_model": "6", "heads": "4"}, {"d_model": 6, "heads": 3}, covers=("heads",),
         id="multi_head-heads-no-longer-divides"),
    Case("permutation", {"text": TEN_THOUSAND_CHARACTERS, "seed": "1.5e400", "pe": "sometimes", "present": "maybe"},
         {"text": TEN_THOUSAND_CHARACTERS, "seed": 0, "pe": False, "present": False},
         uses={"text": "the cat sat on the mat"}, error="5000 words is more than the 16"),
    Case("positional_encoding", {"positions": "0", "d_model": "513", "dims": "600", "present": "maybe"},
         {"positions": 5, "d_model": 8, "dims": [0, 1, 2, 4], "present": False}),
    Case("masked_attention", {"seed": "", "seq_len": "13", "causal": "yes", "step": "9", "present": "maybe"},
         {"seed": 0, "seq_len": 6, "causal": True, "step": 4, "present": False}),
    Case("masked_attention", {"seq_len": "3", "step": "5"}, {"seq_len": 3, "step": 3}, covers=("step",),
         id="masked_attention-step-beyond-the-sentence"),
    Case("cross_attention", {"seed": "100", "d_model": "17", "present": "maybe"},
         {"seed": 0, "d_model": 16, "present": False}),
    Case("exercise", {"present": "maybe"}, {"present": False}),
    Case("decoder", dict(layers="3", heads="3", steps="7", seed="abc", present="maybe"),
         dict(layers=2, heads=2, steps=500, seed=0, present=False)),
    Case("training", dict(task="dance", pos="rope", seq_len="2", vocab="11", d_model="48", heads="3", layers="3",
                          steps="7", lr="0.5", seed="abc", present="maybe"),
         {**TRAINING_DEFAULTS, "present": False}),
    Case("training", {**SHORT_LINK, "ckpt": "21"}, {**SHORT_RUN, "ckpt": 50}, covers=("ckpt",), probe=TRAINED,
         session=trained_session, id="training-ckpt-not-a-checkpoint"),
    Case("training", {**SHORT_LINK, "digits": TEN_THOUSAND_CHARACTERS},
         {**SHORT_RUN, "digits": TEN_THOUSAND_CHARACTERS}, uses={"digits": "3 1 4 1 5 9 2 6"},
         error="5000 words is more than the 12", covers=("digits",), probe=TRAINED, session=trained_session,
         id="training-digits-too-many"),
    # max_chars=200: Streamlit cuts the text to 200 characters (the notice), still too many tokens (the error)
    Case("pretrained", {"text": "a " * 2000, "layer": "7", "head": "0", "present": "maybe"},
         {"text": "a " * 100, "layer": 1, "head": 1, "present": False}, uses={"text": PRETRAINED_DEFAULT_TEXT},
         error="this page draws at most 32", timeout=MODEL_LOAD),
    Case("attention_cost", {"max_len": "3000", "d_k": "100", "arch": "GPT-9", "present": "maybe"},
         {"max_len": 2048, "d_k": 64, "arch": next(iter(COST_ARCHS)), "present": False}),
]

#: Round trips already checked elsewhere, as ``(page, key, kind): tests that together check them``.
DECODER_VALID = "tests/pages/test_decoder.py::test_every_writing_control_is_read_from_the_link_and_used"
DECODER_MALFORMED = "tests/pages/test_decoder.py::test_malformed_link_values_fall_back_with_a_notice"
ELSEWHERE: dict[tuple[str, str, str], tuple[str, ...]] = {
    ("decoder", "prompt", VALID): (DECODER_VALID,),
    ("decoder", "prompt", MALFORMED): (
        "tests/pages/test_decoder.py::test_a_bad_prompt_gets_a_clear_message_and_the_last_good_prompt_is_kept",),
    ("decoder", "temp", VALID): (DECODER_VALID,),
    ("decoder", "temp", MALFORMED): (DECODER_MALFORMED,),
    ("decoder", "top_k", VALID): (DECODER_VALID,),
    ("decoder", "top_k", MALFORMED): (DECODER_MALFORMED,),
    ("decoder", "top_p", VALID): (DECODER_VALID,),
    ("decoder", "top_p", MALFORMED): (DECODER_MALFORMED,),
    ("decoder", "draw", VALID): (DECODER_VALID,),
    ("decoder", "draw", MALFORMED): (DECODER_MALFORMED,),
    ("decoder", "words", VALID): (DECODER_VALID,),
    ("decoder", "words", MALFORMED): (DECODER_MALFORMED,),
    ("worked_example", "seed", VALID): ("tests/test_streamlit_app.py::test_seed_from_the_url_is_restored",),
    ("worked_example", "seed", MALFORMED): (
        "tests/test_streamlit_app.py::test_malformed_seed_falls_back_to_the_default",
        "tests/pages/test_worked_example.py::test_malformed_controls_fall_back_with_a_visible_notice"),
    ("worked_example", "reveal", VALID): (
        "tests/pages/test_worked_example.py::test_every_control_round_trips_through_the_link",
        "tests/pages/test_worked_example.py::test_reveal_from_the_link_shows_only_the_first_stages"),
    ("worked_example", "token", VALID): (
        "tests/test_streamlit_app.py::test_token_selector_explains_that_tokens_output",),
    ("worked_example", "token", MALFORMED): (
        "tests/test_streamlit_app.py::test_token_selector_explains_that_tokens_output",
        "tests/pages/test_worked_example.py::test_malformed_controls_fall_back_with_a_visible_notice"),
    ("worked_example", "tokens", MALFORMED): (
        "tests/pages/test_worked_example.py::test_bad_input_in_the_link_shows_a_message_and_the_lesson",),
    ("worked_example", "X", MALFORMED): (
        "tests/pages/test_worked_example.py::test_bad_input_in_the_link_shows_a_message_and_the_lesson",),
    **{("multi_head", key, VALID): ("tests/pages/test_multi_head.py::test_slider_extremes",)
       for key in ("seed", "d_model", "heads", "seq_len")},
    ("permutation", "pe", VALID): ("tests/pages/test_permutation.py::test_positional_encoding_breaks_it",),
    ("permutation", "perm", MALFORMED): (
        "tests/pages/test_permutation.py::test_bad_permutations_show_an_error_and_fall_back",),
    **{("positional_encoding", key, VALID): ("tests/pages/test_positional_encoding.py::test_other_slider_extremes",)
       for key in ("positions", "d_model")},
    ("masked_attention", "step", VALID): (
        "tests/pages/test_masked_attention.py::test_longest_sentence_at_first_and_last_step",),
    **{("cross_attention", key, VALID): ("tests/pages/test_cross_attention.py::test_slider_extremes",)
       for key in ("seed", "d_model")},
    **{("cross_attention", key, MALFORMED): (
        "tests/pages/test_cross_attention.py::test_empty_sentence_in_the_url_shows_an_error",
        "tests/pages/test_cross_attention.py::test_too_many_tokens_shows_an_error") for key in ("src", "tgt")},
    **{("attention_cost", key, VALID): ("tests/pages/test_attention_cost.py::test_slider_extremes_render",)
       for key in ("max_len", "d_k")},
}


def case_id(case: Case) -> str:
    return case.id or f"{case.page}-{'+'.join(case.keys)}"


def covered() -> dict[tuple[str, str, str], str]:
    found = {(c.page, k, VALID): case_id(c) for c in VALID_CASES for k in c.keys}
    found |= {(c.page, k, MALFORMED): case_id(c) for c in MALFORMED_CASES for k in c.keys}
    return found | {k: " + ".join(refs) for k, refs in ELSEWHERE.items()}


# ------------------------------------------------------------------------------------------------ the tests


def test_keys_are_read_from_the_source_including_conditional_controls_and_raw_parameters():
    assert {"tokens", "X", "seed", "reveal", "token", "present"} <= page_keys("worked_example")
    assert {"ckpt", "digits"} <= page_keys("training")  # drawn only after training
    assert "perm" in page_keys("permutation")  # bound with key=PERM_KEY and bind="query-params"
    assert "present" in page_keys("exercise")  # the router's app-wide key
    for page in PAGES:
        assert page_keys(page) <= QUERY_KEYS.keys(), f"{page}: undocumented key"


def test_every_url_key_of_every_page_has_both_round_trips():
    done = covered()
    missing = [(page, key, kind) for page in PAGES for key in sorted(page_keys(page)) for kind in (VALID, MALFORMED)
               if (page, key, kind) not in done]
    assert not missing, f"URL keys without a round-trip test (add a Case here or a pointer in ELSEWHERE): {missing}"
    stale = [(c.page, k) for c in VALID_CASES + MALFORMED_CASES for k in c.keys if k not in page_keys(c.page)]
    stale += [(page, key) for page, key, _ in ELSEWHERE if key not in page_keys(page)]
    assert not stale, f"cases for keys the page no longer reads: {stale}"
    for refs in ELSEWHERE.values():
        for ref in refs:
            path, name = ref.split("::")
            assert f"def {name}(" in (ROOT / path).read_text(), f"{ref} does not exist"


def open_and_check_widgets(case: Case) -> AppTest:
    at = case.run()
    assert not at.exception, at.exception
    widgets = bound_widgets(at)
    unseen = set(widgets) - page_keys(case.page)
    assert not unseen, f"widgets bound to the URL that url_keys() did not find in the source: {unseen}"
    shown = {key: widget_value(widgets[key]) for key in case.widgets}
    assert same(shown, dict(case.widgets)), shown
    return at


@pytest.mark.parametrize("case", VALID_CASES, ids=case_id)
def test_a_valid_value_in_the_link_is_shown_and_used(case):
    at = open_and_check_widgets(case)
    assert not link_notices(at) and not at.error
    link = share_link(at)
    for key, value in case.query.items():
        assert url_form(key, value) in link, (key, link)
    probe = case.probe or PROBES[case.page]
    params = {**probe.defaults, **case.widgets, **case.uses}
    assert same(probe.shown(at), probe.expected(params))
    for key in set(case.keys) & set(probe.defaults):  # each value changes what the page shows
        assert not same(probe.expected(params), probe.expected({**params, key: probe.defaults[key]})), key
    if "present" in case.keys:
        assert_presenter_mode(at, case.page, on=True)


@pytest.mark.parametrize("case", MALFORMED_CASES, ids=case_id)
def test_a_malformed_value_in_the_link_falls_back_with_a_notice(case):
    at = open_and_check_widgets(case)
    notices = link_notices(at)
    if case.error:
        messages = [e.value for e in at.error]
        assert any(case.error in m for m in messages), messages
    for key in case.keys:
        if case.error and key in case.uses:
            continue  # free text: the box keeps what was typed, the page's error says what it shows instead
        assert notices.get(key) == str(case.widgets[key]), (key, notices)
        assert url_form(key, case.query[key]) not in share_link(at)  # the link shared on is a valid one
    probe = case.probe or PROBES[case.page]
    params = {**probe.defaults, **case.widgets, **case.uses}
    assert same(probe.shown(at), probe.expected(params))
    if "present" in case.keys:
        assert_presenter_mode(at, case.page, on=False)


def test_a_single_value_of_a_multiselect_is_used_without_a_notice():
    case = Case("positional_encoding", {"dims": "3"}, {"dims": [3]})
    at = open_and_check_widgets(case)
    assert not link_notices(at)


def test_a_ten_thousand_character_word_is_refused():
    at = Case("permutation", {"text": "x" * 10_000}).run()
    assert not at.exception
    assert at.error and permutation_shown(at)["X"].shape == (6, 16)


@pytest.mark.parametrize(("query", "value"), [("1.0", 1.0), ("1", 1.0), ("5e-2", 0.05), ("0.0500", 0.05)])
def test_an_option_written_as_another_equal_number_is_used_without_a_notice(query, value):
    case = Case("soft_lookup", {"temp": query}, {"temp": value})
    at = open_and_check_widgets(case)
    assert not link_notices(at)
