"""What the shared tests need to know of each page: declared in the page's own test module, collected here.

A page's own test module, ``tests/pages/test_<page>.py``, ends with ``SHARED = PageTests(...)``: how its numbers
are read and what `core` says they must be (its `Probe`), the links that round-trip each of its URL keys (its
`Case`s), and the shared checks it joins when it fits them (a slider step that changes the charts' data but no
spec, charts drawn on a canvas, its quiz, a clickable chart...). The shared tests (``tests/ui/test_url_state.py``,
``tests/ui/charts/test_spec.py``, ``tests/ui/test_quiz.py``, ``tests/ui/test_layout_stability.py``,
``tests/deploy/test_cluster.py``) collect every routed page's declaration through `declarations`; a routed page
that declares nothing is not a collection error there but a named failure of ``tests/test_registry.py``, whose
message says what to add and where.
"""

from __future__ import annotations

import functools
import importlib
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from streamlit.testing.v1 import AppTest

from devtools.appserver import ROOT, router_pages
from tests.helpers.apptest import APP, TIMEOUT, chart_specs

VALID, MALFORMED = "valid", "malformed"
SHARED = "SHARED"  # the name a page's test module declares its `PageTests` under
RECIPE = "docs/adding-a-page.md"


@dataclass(frozen=True)
class Probe:
    """How to read a page's numbers (`shown`) and what `core` says they must be for given parameters."""

    defaults: Mapping[str, Any]
    shown: Callable[[AppTest], Any]
    expected: Callable[[Mapping[str, Any]], Any]


#: A page whose numbers the link tests do not read (no page control, or checked by the page's own tests).
NO_NUMBERS = Probe({}, lambda at: None, lambda p: None)


@dataclass(frozen=True)
class Case:
    """One link, opened with one AppTest run (``tests/ui/test_url_state.py``).

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
        at.switch_page(page_file(self.page))
        at.query_params.update(dict(self.query))
        for key, value in (self.session() if self.session else {}).items():
            at.session_state[key] = value
        return at.run()


@dataclass(frozen=True)
class Quiz:
    """The page's "predict, then reveal" question (`ui.quiz`): its key, the answer the page must compute for the
    link `query`, checked by ``tests/ui/test_quiz.py``."""

    key: str
    answer: str
    query: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PageTests:
    """What the shared tests need to know of one page.

    Required:
        probe: how its numbers are read and what `core` says they must be (``tests/ui/test_url_state.py``).
        valid, malformed: for each URL key of the page, the router's ``present`` included, a link with a valid
            value and one with a value the page cannot use; or a pointer in `elsewhere`.

    The shared checks a page joins when it fits them:
        elsewhere: ``{(key, VALID or MALFORMED): ("tests/…py::test_name", …)}``, round trips checked by other tests.
        presenter_text: for a page that draws no chart until the student acts, text of an explanation that
            presenter mode hides (the others show presenter mode by their charts' projector fonts).
        data_step: ``(key, (a, b))``: moving that slider from a to b changes the charts' data and none of their
            specs (``tests/ui/charts/test_spec.py``).
        canvas: every chart of the page is drawn on a canvas (``tests/ui/charts/test_spec.py``).
        concept: the page draws from cached NumPy results only (no sandbox, model or training run), so the
            cluster test's students open it (``tests/deploy/test_cluster.py``).
        quiz: the page's "predict, then reveal" question (``tests/ui/test_quiz.py``).
        click: clicks a cell of a clickable chart and returns the rerun page; the click must keep every element
            in place (``tests/ui/test_layout_stability.py``).
        structural: ``{key: why}``, the controls that change the page's structure on purpose (not checked by
            ``tests/ui/test_layout_stability.py``).
    """

    probe: Probe
    valid: Sequence[Case]
    malformed: Sequence[Case]
    elsewhere: Mapping[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)
    presenter_text: str | None = None
    data_step: tuple[str, tuple[Any, Any]] | None = None
    canvas: bool = False
    concept: bool = False
    quiz: Quiz | None = None
    click: Callable[[AppTest], AppTest] | None = None
    structural: Mapping[str, str] = field(default_factory=dict)


class RegistrationError(LookupError):
    """A routed page without a usable declaration; the message says what to add and where."""


def page_file(page: str) -> str:
    """The router's file of a page, by name (``"soft_lookup"`` -> ``"app_pages/soft_lookup.py"``)."""
    files = {p.name: p.file for p in router_pages()}
    if page not in files:
        raise RegistrationError(f"{page}: not in the router; add its st.Page(...) to page_sections() of "
                                "streamlit_app.py")
    return files[page]


def own_test_module(page: str) -> str:
    return f"tests/pages/test_{page}.py"


@functools.cache
def declaration(page: str) -> PageTests:
    """The `PageTests` that ``tests/pages/test_<page>.py`` declares as `SHARED`; raises `RegistrationError` saying what
    is missing."""
    path = own_test_module(page)
    if not (ROOT / path).is_file():
        raise RegistrationError(f"{page}: no {path}. Create it (python -m devtools.new_page writes one) with the "
                                f"page's tests and `{SHARED} = PageTests(...)` at its end ({RECIPE})")
    return read_declaration(page, importlib.import_module(path[:-3].replace("/", ".")))


def read_declaration(page: str, module: types.ModuleType) -> PageTests:
    """`module`'s `SHARED`, checked: a `PageTests` whose cases are all `page`'s."""
    path = own_test_module(page)
    shared = getattr(module, SHARED, None)
    if not isinstance(shared, PageTests):
        raise RegistrationError(
            f"{page}: {path} declares no `{SHARED} = PageTests(...)`. Add one at the end of {path}: its Probe (how "
            "its numbers are read and what core says they must be), a valid and a malformed Case for each of its "
            f"URL keys (the router's `present` included), and the shared checks it fits ({RECIPE})")
    strays = sorted({c.page for c in (*shared.valid, *shared.malformed)} - {page})
    if strays:
        raise RegistrationError(f"{page}: {path} declares cases for other pages ({strays}); each page declares its own")
    return shared


def declarations() -> dict[str, PageTests]:
    """Every routed page's declaration, in the router's order. A page without one is left out here (so the shared
    tests still collect) and fails ``tests/test_registry.py`` by name."""
    found = {}
    for page in router_pages():
        try:
            found[page.name] = declaration(page.name)
        except RegistrationError:
            continue
    return found


# ------------------------------------------------------------------------------------------- presenter mode

PROJECTOR_FONTS = {"labelFontSize": 16, "titleFontSize": 18}  # ui.charts.for_projector: 11 and 12 × 1.5


def assert_presenter_mode(at: AppTest, page: str, on: bool) -> None:
    """Charts use the projector's fonts (ui.charts.for_projector), or a long explanation is hidden."""
    fonts = [{k: spec.get("config", {}).get("axis", {}).get(k) for k in PROJECTOR_FONTS} for spec, _ in chart_specs(at)]
    snippet = declaration(page).presenter_text
    if snippet is not None:
        assert snippet in (ROOT / page_file(page)).read_text()
        assert any(snippet in m.value for m in at.markdown) is not on
    else:
        assert fonts, "no chart on the page to show presenter mode"
        assert all((f == PROJECTOR_FONTS) is on for f in fonts), fonts
