"""The app, run headless with `streamlit.testing.v1.AppTest`."""

import functools
import importlib
import inspect
import re

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from core import worked_example
from devtools.appserver import ROOT, router_pages
from tests.helpers import lesson_values as lesson
from tests.helpers.apptest import heatmaps, open_code, run_page, share_links
from tests.helpers.fresh_process import fresh_python


def run_app(**query) -> AppTest:
    return run_page(None, **query)


def chart_data(at: AppTest) -> dict[str, np.ndarray]:
    return heatmaps(at)


def test_app_starts_on_the_worked_example():
    at = run_app()
    assert not at.exception
    assert at.title[0].value.startswith("Worked example")


def test_lesson_numbers_are_on_the_page_at_seed_0():
    at = run_app()
    charts = chart_data(at)
    np.testing.assert_array_equal(np.round(charts["Q"], 3), lesson.Q)
    np.testing.assert_array_equal(np.round(charts["raw scores Q Kᵀ"], 3), lesson.RAW_SCORES)
    np.testing.assert_array_equal(np.round(charts["scaled scores Q Kᵀ / √4"], 3), lesson.SCALED_SCORES)
    np.testing.assert_array_equal(np.round(charts["attention weights A"], 3), lesson.WEIGHTS)
    np.testing.assert_array_equal(np.round(charts["output = A V"], 3), lesson.OUTPUT)
    explanation = " ".join(m.value for m in at.latex)
    assert r"0.509\,v_{1} + 0.196\,v_{2} + 0.295\,v_{3}" in explanation
    assert "-1.107 & 1.058 & 1.509 & 1.857" in explanation
    assert any("lesson's printed numbers" in c.value or "lesson's numbers" in c.value for c in at.caption)


def test_pytorch_cross_check_opens_from_the_link_and_is_small():
    assert not run_app().metric  # closed by default: the landing page does not need PyTorch
    at = run_app(check="true")
    assert not at.exception
    assert float(at.metric[0].value) < 1e-6


def test_opening_the_cross_check_runs_it():
    at = run_app()
    at.session_state["check"] = True
    at.run()
    assert float(at.metric[0].value) < 1e-6


def test_the_landing_page_draws_without_importing_pytorch():
    """PyTorch takes seconds to import; the first page must not wait for it (the router warms it up afterwards)."""
    script = (
        "import sys\n"
        "import ui.warmup\n"
        "ui.warmup.import_in_background = lambda *m, **kw: None  # only what the page itself imports\n"
        "from tests.helpers.apptest import run_page\n"
        "at = run_page(None)\n"
        "assert not at.exception and at.get('vega_lite_chart'), 'the page did not draw'\n"
        "print('torch' in sys.modules)\n"
    )
    assert fresh_python(script).strip().splitlines()[-1] == "False"


def test_changing_the_seed_changes_the_numbers():
    at = run_app()
    at.slider(key="seed").set_value(7).run()
    assert not at.exception
    charts = chart_data(at)
    np.testing.assert_allclose(charts["attention weights A"], worked_example(7).weights)
    assert not np.allclose(np.round(charts["attention weights A"], 3), lesson.WEIGHTS)


def test_seed_from_the_url_is_restored():
    at = run_app(seed="7")
    assert at.slider(key="seed").value == 7
    np.testing.assert_allclose(chart_data(at)["output = A V"], worked_example(7).output)


@pytest.mark.parametrize("bad", ["abc", "-3", "100000", "1.5e400", ""])
def test_malformed_seed_falls_back_to_the_default(bad):
    at = run_app(seed=bad)
    assert not at.exception
    assert at.slider(key="seed").value == 0
    np.testing.assert_array_equal(np.round(chart_data(at)["attention weights A"], 3), lesson.WEIGHTS)


def test_token_selector_explains_that_tokens_output():
    at = run_app(token="sat")
    assert at.radio(key="token").value == "sat"
    explanation = " ".join(m.value for m in at.latex)
    assert r"0.233\,v_{1} + 0.104\,v_{2} + 0.663\,v_{3}" in explanation
    at = run_app(token="dog")  # not a token: falls back to the first
    assert not at.exception and at.radio(key="token").value == "the"


@pytest.mark.parametrize(
    "page", [p for p in router_pages() if p.name != "pretrained"],  # pretrained: model load, see its own tests
    ids=lambda p: p.name,
)
def test_every_page_leaves_the_copy_link_box_and_sends_its_code_only_when_asked(page):
    """The page's fragment writes the link into the router's slot (`ui.layout.page_fragment`), exactly once.

    No code block is sent until a "Show the code" expander is opened (`ui.layout.show_source`): the
    browser's syntax highlighter would otherwise load with the page. Opened, each block is the real source
    of the function named above it.
    """
    at = run_page(page.file)
    assert not at.exception
    assert len(share_links(at)) == 1
    assert not at.code
    at = open_code(at)
    assert not at.exception and len(share_links(at)) == 1
    names = [m.group(1) for c in at.caption if (m := re.fullmatch(r"`([\w.]+)`", c.value))]
    assert names and len(names) == len(at.code)
    for name, code in zip(names, at.code, strict=True):
        assert code.value.rstrip() == inspect.getsource(resolve(name)).rstrip(), name


def resolve(name: str) -> object:
    """The object named ``module.qualname`` (the longest importable prefix is the module)."""
    parts = name.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        return functools.reduce(getattr, parts[i:], module)
    raise LookupError(name)


def page_fragments(source: str) -> tuple[list[str], list[str]]:
    """Names of the module-level functions decorated with `page_fragment`, and of the module-level calls."""
    import ast

    tree = ast.parse(source)
    decorated = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)
                 and any(isinstance(d, ast.Name) and d.id == "page_fragment" for d in node.decorator_list)]
    called = [node.value.func.id for node in tree.body if isinstance(node, ast.Expr)
              and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)]
    return decorated, called


@pytest.mark.parametrize("page", router_pages(), ids=lambda p: p.name)
def test_every_page_runs_its_widgets_in_one_page_fragment(page):
    """A widget change then reruns only the page's fragment, not the router (its navigation and sidebar).

    The browser tests check the effect (no navigation re-sent on a slider step, the link follows); this
    checks the structure on every page, the exercise page (no slider) included: one fragment called once at
    module level, and no widget created at module level outside it. Other `page_fragment` s are sections
    called from inside it (nested fragments), never at module level.
    """
    source = (ROOT / page.file).read_text()
    decorated, called = page_fragments(source)
    top = [name for name in decorated if name in called]
    assert len(top) == 1 and called.count(top[0]) == 1, f"{page.name}: no single page_fragment"
    module_level = source.split("@page_fragment\ndef ")[0]
    widgets = re.findall(r"^(?:st\.\w+|bound_\w+|seed_slider|tokens_input)\(", module_level, flags=re.MULTILINE)
    assert all(w in ("st.title(", "st.latex(", "st.markdown(", "st.header(", "st.caption(") for w in widgets), widgets
