"""A page reads as a table of contents: a short page function that calls one function per section.

Streamlit's own ``hello`` demo is written this way. A page body of 150 lines mixes a page's sections, so a change
to one of them means reading all of them; a function per section keeps each one on one screen.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from devtools.appserver import router_pages

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "app_pages").glob("*.py"))
#: Longest function a page may hold, decorators excluded: one screen of code. A page's longest section (its
#: text, a diagram and a table) fits in it; a page body that draws more than one section does not.
MAX_FUNCTION_LINES = 60


def long_functions(source: str, limit: int = MAX_FUNCTION_LINES) -> list[tuple[str, int]]:
    """``(name, lines)`` of every function in `source`, nested ones included, longer than `limit` lines."""
    return [(node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno + 1 > limit]


def test_long_functions_counts_from_def_to_the_last_line_nested_ones_included():
    lines = "\n".join(f"x{i} = {i}" for i in range(3))
    body, inner_body = textwrap.indent(lines, " " * 4), textwrap.indent(lines, " " * 8)
    source = f"@decorator\ndef page_body() -> None:\n{body}\n    def inner():\n{inner_body}\n        return 1\n"
    assert long_functions(source, limit=9) == []
    assert long_functions(source, limit=8) == [("page_body", 9)]
    assert long_functions(source, limit=4) == [("page_body", 9), ("inner", 5)]


def test_there_are_pages_to_check():
    assert len(PAGES) > 10


@pytest.mark.router_wide  # every page in one test: docs/adding-a-page.md's quick check selects it
def test_every_page_is_in_the_router():
    """A page the router does not list is not served, and `AppTest.switch_page` to it quietly runs the landing page
    instead: every test of it would then pass while testing the worked example."""
    assert {p.stem for p in PAGES} == {p.name for p in router_pages()}


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem)
def test_every_page_has_its_own_test_file(path):
    assert (ROOT / "tests" / "pages" / f"test_{path.stem}.py").is_file(), f"no tests/pages/test_{path.stem}.py"


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem)
def test_every_function_of_a_page_fits_on_one_screen(path):
    too_long = long_functions(path.read_text())
    assert not too_long, (f"{path.name}: {too_long} longer than {MAX_FUNCTION_LINES} lines; split it into one "
                          "function per section (see docs/adding-a-page.md)")
