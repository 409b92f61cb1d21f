"""The link sweep: every page of the router, opened with links drawn at random, shows no exception.

A link is anything a student can type or receive, so for every page Hypothesis draws links from each query key's
domain as the code defines it, not from a copy typed here: the keys a page reads (`tests.ui.url_keys`, from its
source and `ui.url_state.QUERY_KEYS`), and for each key bound to a widget the widget's own range, options or kind,
read from the page drawn in its fullest state (the decoder trained, the training page with a finished run). Each
key gets valid values, its boundaries (first and last option, a slider's ends and one step past them, the same
number written another way, ``1.50`` for ``1.5``) and malformed ones (text, empty, ``nan``, ``1e400``, a
subnormal). Free text gets words of the page's own language (the decoder's prompts are prefixes of its sentences,
the whole sentence included), unknown words and over-long input; the worked example gets its own tokens and X.

For each link, three things must hold:

* the page draws with no exception element;
* every bound widget that did not take the link's value is named by the router's fallback notice;
* the address the page writes back reproduces the view: opened as a new link, it gives the same widget values
  and the same messages, and writes back the same address again.

The budget is fixed and the seed too, so the suite is repeatable: `EXAMPLES` links per page (more on the
decoder, whose prompt × seed space is the largest). ``LINK_SWEEP_EXAMPLES=200`` sweeps longer, and
``LINK_SWEEP_SEED`` draws other links (docs/development.md). A failure found here becomes an ordinary
regression test next to the page's own tests.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from core import LESSON_TOKENS
from decoder.language import all_sentences
from decoder.writing import MAX_PROMPT, WORDS
from tests.helpers.apptest import APP, heatmaps, share_link
from tests.pages.test_training import SHORT_RUN, trained_session
from tests.ui.test_url_state import bound_widgets, link_notices, widget_value
from tests.ui.url_keys import PAGES, page_keys
from ui.url_state import QUERY_KEYS, _matches

#: Links per page in the suite; the decoder gets `DECODER_FACTOR` times as many.
EXAMPLES = int(os.environ.get("LINK_SWEEP_EXAMPLES", "5"))
DECODER_FACTOR = 3
SEED = int(os.environ.get("LINK_SWEEP_SEED", "63"))
#: Shrinking a failing link reruns the page hundreds of times: off in the suite (the failing link is printed).
PHASES = (Phase.explicit, Phase.generate, *((Phase.shrink,) if os.environ.get("LINK_SWEEP_SHRINK") else ()))
TIMEOUT = 600  # seconds: the pretrained page loads its model on the first visit, the decoder trains once

#: The decoder's short run, trained once for the sweep: links with these settings open on a trained decoder.
DECODER_RUN = {"steps": "100"}
TRAINING_RUN = {k: str(v) for k, v in SHORT_RUN.items()}


@dataclass(frozen=True)
class PageState:
    """What a page's links start from (settings of a run trained for the sweep) and the session that holds it."""

    base: Mapping[str, str]
    session: Callable[[], dict[str, Any]] | None = None


STATES: dict[str, PageState] = {
    "decoder": PageState(DECODER_RUN),
    "training": PageState(TRAINING_RUN, trained_session),
}


def open_link(page: str, query: Mapping[str, str | list[str]]) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.switch_page(PAGES[page].file)
    at.query_params.update(dict(query))
    state = STATES.get(page)
    for key, value in (state.session() if state and state.session else {}).items():
        at.session_state[key] = value
    return at.run()


def train_decoder_run() -> None:
    """Train the decoder's short run through its page, as a student would (the server's shared runs keep it)."""
    at = open_link("decoder", DECODER_RUN)
    if at.button(key="train").label == "Train":
        at.button(key="train").click().run()
    assert not at.exception, at.exception


# ---------------------------------------------------------------------------------------- each key's domain

MALFORMED = ["", "abc", "nan", "inf", "-inf", "1e400", "1e-310", "-1", "0x10", " ", "%", "∞", "1,5", "true "]


def number_forms(label: str) -> list[str]:
    """The same number written other ways by hand: ``1.50``, ``1.5e0``, ``01.5`` (none when not a number)."""
    try:
        x = float(label)
    except ValueError:
        return []
    return [f"{x:.2f}", f"{x:e}", f"0{label}", f"{x}", f"+{label}"]


def text_words(vocabulary: list[str]) -> st.SearchStrategy[str]:
    """Words a student might type: the page's own, in any case, or anything else."""
    return st.one_of(st.sampled_from(vocabulary), st.sampled_from(vocabulary).map(str.upper),
                     st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), min_size=1, max_size=45))


def sentence(words: st.SearchStrategy[str], sizes: list[int]) -> st.SearchStrategy[str]:
    return st.sampled_from(sizes).flatmap(lambda n: st.lists(words, min_size=n, max_size=n)).map(" ".join)


def prompts() -> st.SearchStrategy[str]:
    """The decoder's prompts: a prefix of one of its language's sentences (the whole sentence, ending with ".",
    included), or words of its vocabulary in any order, unknown words, or more words than it reads."""
    sentences = all_sentences()
    prefix = st.tuples(st.sampled_from(sentences), st.integers(1, 20)).map(lambda s: " ".join(s[0][: s[1]]))
    return st.one_of(prefix, prefix, sentence(text_words(list(WORDS)), [0, 1, 2, MAX_PROMPT, MAX_PROMPT + 1]))


def permutations() -> st.SearchStrategy[str]:
    valid = st.integers(1, 18).flatmap(lambda n: st.permutations(range(n))).map(lambda p: ",".join(map(str, p)))
    return st.one_of(valid, st.sampled_from(MALFORMED + ["0,0,1", "1,2,3", "0;1", "0, 1"]))


def digit_sequences() -> st.SearchStrategy[str]:
    digits = st.integers(-2, 12).map(str) | st.sampled_from(["x", "1.5", "", "٣"])
    return st.lists(digits, max_size=16).map(" ".join)


def own_matrices() -> st.SearchStrategy[dict[str, str]]:
    """The worked example's own input in a link: tokens and X (rows ';', entries ','), each may be malformed."""
    entry = st.one_of(st.integers(-9, 9).map(str), st.floats(allow_nan=True, allow_infinity=True).map(repr),
                      st.sampled_from(MALFORMED))
    rows = st.integers(0, 9)
    cols = st.integers(0, 5)

    def matrix(shape: tuple[int, int]) -> st.SearchStrategy[str]:
        row = st.lists(entry, min_size=shape[1], max_size=shape[1]).map(",".join)
        return st.lists(row, min_size=shape[0], max_size=shape[0]).map(";".join)

    tokens = sentence(text_words(list(LESSON_TOKENS) + ["a", "b", "c"]), [0, 1, 2, 3, 8, 9])
    parts = st.fixed_dictionaries({}, optional={"tokens": tokens, "X": st.tuples(rows, cols).flatmap(matrix)})
    return parts


#: Free-text keys: what a student types there.
TEXT: dict[str, Callable[[], st.SearchStrategy[str]]] = {
    "prompt": prompts,
    "perm": permutations,
    "digits": digit_sequences,
}


def generic_text() -> st.SearchStrategy[str]:
    words = text_words(["the", "cat", "sat", "on", "mat", "le", "chat", ".", ",", "The", "dog"])
    return st.one_of(sentence(words, [0, 1, 2, 6, 15, 16, 17, 33]), st.just("x" * 10_000), st.just("w " * 500))


def widget_domain(key: str, widget: Any) -> st.SearchStrategy[str | list[str]]:
    """Link values for the widget bound to `key`, read from the widget: its values, boundaries, malformed ones."""
    kind = type(widget).__name__
    proto = widget.proto
    malformed = st.sampled_from(MALFORMED)
    if kind in ("SelectSlider", "Radio"):
        labels = list(proto.options)
        aliases = [form for label in labels for form in number_forms(label)]
        values = [st.sampled_from(labels), st.sampled_from([labels[0], labels[-1]])]
        return st.one_of(*values, *([st.sampled_from(aliases)] if aliases else []), malformed)
    if kind == "Slider":
        low, high, step = proto.min, proto.max, proto.step or 1
        ends = [low, high, low - step, high + step]
        as_text = st.sampled_from(ends).map(lambda v: f"{v:g}")
        inside = st.integers(int(low), int(high)).map(str)
        return st.one_of(inside, as_text, inside.map(lambda v: f"{v}.0"), malformed)
    if kind in ("Toggle", "Checkbox", "Expander"):
        return st.sampled_from(["true", "false", "True", "FALSE", "1", "0", "yes", ""])
    if kind == "Multiselect":
        labels = list(proto.options)
        one = st.one_of(st.sampled_from(labels), malformed)
        return st.one_of(st.lists(one, min_size=1, max_size=len(labels) + 2), one)
    if kind == "TextInput":
        return TEXT.get(key, generic_text)()
    raise AssertionError(f"no link values for a {kind} bound to {key!r}: add its domain here")


@dataclass(frozen=True)
class Domain:
    """Every key of a page and the link values drawn for it."""

    keys: Mapping[str, st.SearchStrategy[str | list[str]]]
    own_input: bool  # the worked example's tokens and X


def page_domain(page: str) -> Domain:
    """Read from the page drawn in its fullest state: every bound widget's domain, and the keys it reads directly."""
    state = STATES.get(page, PageState({}))
    at = open_link(page, state.base)
    assert not at.exception, at.exception
    widgets = bound_widgets(at)
    keys = page_keys(page)
    assert keys <= QUERY_KEYS.keys()
    unbound = keys - widgets.keys() - {"tokens", "X"}
    assert not unbound, f"{page}: keys read but bound to no widget drawn, give them a domain here: {unbound}"
    return Domain({k: widget_domain(k, widgets[k]) for k in sorted(keys) if k in widgets},
                  own_input=bool({"tokens", "X"} & keys))


def links(domain: Domain, base: Mapping[str, str]) -> st.SearchStrategy[dict[str, str | list[str]]]:
    """Links of a page: any subset of its keys, each with a value of its domain, over the page's base state."""
    drawn = st.fixed_dictionaries({}, optional=dict(domain.keys))
    own = own_matrices() if domain.own_input else st.just({})
    return st.tuples(drawn, own).map(lambda parts: {**base, **parts[0], **parts[1]})


# ------------------------------------------------------------------------------------------------ the checks


def view(at: AppTest) -> dict[str, Any]:
    """What a student sees of a link: every bound widget's value, the page's messages and text, the matrix X."""
    text = [el.value for el in (*at.markdown, *at.caption, *at.error, *at.warning)]
    maps = heatmaps(at)
    return {"widgets": {k: widget_value(w) for k, w in bound_widgets(at).items()}, "text": text,
            "X": maps["X"].tolist() if "X" in maps else None}


def address(at: AppTest) -> dict[str, str | list[str]]:
    """The address the page wrote back: its query parameters after the run."""
    return dict(at.query_params)


def query_of(link: str) -> dict[str, str | list[str]]:
    pairs = urllib.parse.parse_qs(urllib.parse.urlsplit(link).query, keep_blank_values=True)
    return {k: v if len(v) > 1 else v[0] for k, v in pairs.items()}


def check_link(page: str, query: Mapping[str, str | list[str]]) -> None:
    at = open_link(page, query)
    assert not at.exception, [e.value for e in at.exception]
    notices = link_notices(at)
    for key, widget in bound_widgets(at).items():
        if key in query and not _matches(query[key], widget_value(widget)):
            assert key in notices, f"`{key}`={query[key]!r} became {widget_value(widget)!r} without a notice"
    written = address(at)
    assert query_of(share_link(at)) == written, "the sidebar's link is not the address"
    again = open_link(page, written)
    assert not at.exception and not again.exception, [e.value for e in again.exception]
    assert view(again) == view(at), "the written-back address opens another view"
    assert address(again) == written, "the written-back address is not written back as it is"
    widgets = view(at)["widgets"]
    at.run()  # a later run of the same session (any click): the address still holds the view
    assert not at.exception, [e.value for e in at.exception]
    assert view(at)["widgets"] == widgets and query_of(share_link(at)) == written, \
        "a later run changed the address of an unchanged view"


def sweep(page: str) -> None:
    state = STATES.get(page, PageState({}))
    if page == "decoder":  # its links open on the short run, trained first in this process (a module-level cache)
        train_decoder_run()
    domain = page_domain(page)
    budget = EXAMPLES * (DECODER_FACTOR if page == "decoder" else 1)

    @seed(SEED)
    @settings(max_examples=budget, deadline=None, database=None, phases=PHASES,
              suppress_health_check=list(HealthCheck))
    @given(links(domain, state.base))
    def one_link(query: dict[str, str | list[str]]) -> None:
        check_link(page, query)

    one_link()


@pytest.mark.parametrize("page", sorted(PAGES))
def test_no_link_a_page_can_be_given_shows_an_exception(page):
    sweep(page)
