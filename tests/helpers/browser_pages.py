"""Opening a page of the app in a test's browser, and reading what it shows."""

from __future__ import annotations

import re

from devtools.browser import PAGE_TEXT_JS, settle

#: The keyboard-focusable element of a Streamlit slider (react-aria renders a hidden range input).
SLIDER = '[data-testid="stMain"] [data-testid="stSlider"] input[type="range"]'


def open_page(page, app_url: str, url_path: str, query: str = "") -> None:
    page.goto(f"{app_url}/{url_path}" + (f"?{query}" if query else ""))
    settle(page)


def main_numbers(page) -> list[str]:
    """Every number written on the page outside the sidebar (metrics, captions, LaTeX, chart labels)."""
    return re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", page.evaluate(PAGE_TEXT_JS))
