"""Every notebook is offered by its page's export menu and run by a test of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from notebooks import PAGES

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("page", PAGES)
def test_every_notebook_is_offered_by_its_page_and_run_by_its_own_test(page):
    assert f'offer_notebook("{page}",' in (ROOT / "app_pages" / f"{page}.py").read_text()
    test = (ROOT / "tests" / "notebooks" / f"test_{page}.py").read_text()
    assert "notebook_from_page(" in test and "run_notebook(" in test and "assert_close(" in test
