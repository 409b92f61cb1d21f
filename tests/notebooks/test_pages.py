"""Every notebook is offered by its page's menu, run by a test of its own, and imports none of the app's packages."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest

from benchmarks.notebooks import random_state
from notebooks import PAGES, build_notebook, settings_of

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("page", PAGES)
def test_every_notebook_is_offered_by_its_page_and_run_by_its_own_test(page):
    assert f'offer_notebook("{page}",' in (ROOT / "app_pages" / f"{page}.py").read_text()
    test = (ROOT / "tests" / "notebooks" / f"test_{page}.py").read_text()
    downloads = "notebook_from_page(" in test or "page_and_notebook(" in test
    assert downloads and "run_notebook(" in test and "assert_close(" in test


#: The app's own packages: a notebook's code imports none of them (it runs with NumPy, PyTorch, pandas, Altair).
APP_PACKAGES = ("core", "training", "decoder", "exercise", "pretrained", "cost", "poll", "ui", "notebooks",
                "app_pages", "streamlit")


@pytest.mark.parametrize("page", PAGES)
def test_a_notebook_s_code_imports_none_of_the_app_s_packages(page):
    nb = build_notebook(page, settings_of(page, random_state(page, random.Random(0))))
    for cell in nb.cells:
        if cell.cell_type == "code":
            for node in ast.walk(ast.parse(cell.source)):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                         [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                assert not [n for n in names if n.split(".")[0] in APP_PACKAGES], (page, cell.source[:200])
