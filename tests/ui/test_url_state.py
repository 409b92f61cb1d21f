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
case, or without a pointer to the test that already covers it, fails
`test_every_url_key_of_every_page_has_both_round_trips`. Each run also checks that every bound widget it
finds was seen by that reading. The cases, how a page's numbers are read and what `core` says they must be for
a link's values (its `Probe`) are the page's own: declared in ``tests/pages/test_<page>.py`` (``SHARED``) and
collected by `tests.helpers.registry`.

One AppTest run per case. To keep the file fast, the independent keys of a page share one link per kind;
each key's widget, notice and link are still checked one by one, and each valid value must matter on its
own: what `core` gives with that key put back to its default differs from what the page must show.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from devtools.appserver import ROOT
from tests.helpers.apptest import share_link
from tests.helpers.registry import MALFORMED, VALID, Case, assert_presenter_mode, declarations, own_test_module
from tests.pages.test_permutation import permutation_shown
from tests.ui.url_keys import PAGES, page_keys
from ui.url_state import QUERY_KEYS

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

# Every routed page's own: one case per page and kind where the page's keys are independent (each widget, notice
# and number is still checked key by key); a separate case where one key's valid range depends on another's value.
PAGE_TESTS = declarations()
VALID_CASES = [case for shared in PAGE_TESTS.values() for case in shared.valid]
MALFORMED_CASES = [case for shared in PAGE_TESTS.values() for case in shared.malformed]
#: Round trips already checked elsewhere, as ``(page, key, kind): tests that together check them``.
ELSEWHERE: dict[tuple[str, str, str], tuple[str, ...]] = {
    (page, key, kind): refs for page, shared in PAGE_TESTS.items() for (key, kind), refs in shared.elsewhere.items()}


def case_id(case: Case) -> str:
    return case.id or f"{case.page}-{'+'.join(case.keys)}"


def covered() -> dict[tuple[str, str, str], str]:
    found = {(c.page, k, VALID): case_id(c) for c in VALID_CASES for k in c.keys}
    found |= {(c.page, k, MALFORMED): case_id(c) for c in MALFORMED_CASES for k in c.keys}
    return found | {k: " + ".join(refs) for k, refs in ELSEWHERE.items()}


# ------------------------------------------------------------------------------------------------ the tests


@pytest.mark.router_wide  # every page in one test: docs/adding-a-page.md's quick check selects it
def test_keys_are_read_from_the_source_including_conditional_controls_and_raw_parameters():
    assert {"tokens", "X", "seed", "reveal", "token", "present"} <= page_keys("worked_example")
    assert {"ckpt", "digits"} <= page_keys("training")  # drawn only after training
    assert "perm" in page_keys("permutation")  # bound with key=PERM_KEY and bind="query-params"
    assert "present" in page_keys("exercise")  # the router's app-wide key
    for page in PAGES:
        assert page_keys(page) <= QUERY_KEYS.keys(), f"{page}: undocumented key"


@pytest.mark.router_wide  # every page in one test: docs/adding-a-page.md's quick check selects it
def test_every_url_key_of_every_page_has_both_round_trips():
    done = covered()
    missing = [(page, key, kind) for page in PAGES for key in sorted(page_keys(page)) for kind in (VALID, MALFORMED)
               if (page, key, kind) not in done]
    assert not missing, ("URL keys without a round-trip test: add a Case to `valid` or `malformed` of SHARED in the "
                         "page's own tests/pages/test_<page>.py, or a pointer in its `elsewhere`: "
                         + "; ".join(f"{page}: {key} ({kind}), in {own_test_module(page)}"
                                     for page, key, kind in missing))
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
    probe = case.probe or PAGE_TESTS[case.page].probe
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
    probe = case.probe or PAGE_TESTS[case.page].probe
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
