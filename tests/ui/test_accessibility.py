"""The router installs the phone and keyboard rules on every page (`ui.accessibility`); the browser tests
(`tests/browser/test_phone.py`) check what they do."""

import tomllib

import pytest

from devtools.appserver import ROOT
from tests.helpers.apptest import run_page
from ui.accessibility import CAPTION_COLOR, SCROLL_BOX_SELECTOR


def test_every_run_of_the_router_sends_the_scroll_box_rule_and_script_once_in_the_sidebar():
    at = run_page(None)
    sent = [el for el in at.sidebar.get("html") if SCROLL_BOX_SELECTOR in el.proto.body]
    assert len(sent) == 1
    assert "<script>" in sent[0].proto.body and "overflow-x: auto" in sent[0].proto.body
    assert not [el for el in at.main.get("html") if SCROLL_BOX_SELECTOR in el.proto.body]


def relative_luminance(colour: str) -> float:
    """WCAG 2.1's relative luminance of a ``#rrggbb`` colour."""
    channels = [int(colour.lstrip("#")[k:k + 2], 16) / 255 for k in (0, 2, 4)]
    r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG 2.1's contrast ratio of two colours, from 1 to 21."""
    hi, lo = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_contrast_is_computed_as_wcag_defines_it():
    assert contrast("#000000", "#ffffff") == pytest.approx(21)
    assert contrast("#76797c", "#ffffff") == pytest.approx(4.37, abs=0.01)  # Streamlit's caption grey: too light


def test_text_has_a_contrast_of_4_5_or_more_on_every_background_of_the_theme():
    """WCAG 1.4.3: body text, captions (`ui.accessibility.CAPTION_COLOR`) and the primary colour (links, slider
    values) against the page's and the sidebar's backgrounds, read from `.streamlit/config.toml`."""
    theme = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())["theme"]
    for background in (theme["backgroundColor"], theme["secondaryBackgroundColor"]):
        for name, colour in (("text", theme["textColor"]), ("caption", CAPTION_COLOR),
                             ("primary", theme["primaryColor"])):
            assert contrast(colour, background) >= 4.5, f"{name} {colour} on {background}"
