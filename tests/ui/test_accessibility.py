"""The router installs the phone and keyboard rules on every page (`ui.accessibility`); the browser tests
(`tests/browser/test_phone.py`) check what they do."""

from tests.helpers.apptest import run_page
from ui.accessibility import SCROLL_BOX_SELECTOR


def test_every_run_of_the_router_sends_the_scroll_box_rule_and_script_once_in_the_sidebar():
    at = run_page(None)
    sent = [el for el in at.sidebar.get("html") if SCROLL_BOX_SELECTOR in el.proto.body]
    assert len(sent) == 1
    assert "<script>" in sent[0].proto.body and "overflow-x: auto" in sent[0].proto.body
    assert not [el for el in at.main.get("html") if SCROLL_BOX_SELECTOR in el.proto.body]
