"""The suite's `AppTest` runs share one scan of the installed packages per process (`tests.helpers.component_scan`)."""

from __future__ import annotations

import importlib.metadata

from streamlit.testing.v1 import AppTest

from tests.helpers import component_scan

PAGE = "import streamlit as st\nst.write('one')\n"


def test_new_apptests_read_the_installed_packages_once_per_process(monkeypatch):
    reads = []
    library_distributions = importlib.metadata.distributions
    monkeypatch.setattr(importlib.metadata, "distributions",
                        lambda **kw: reads.append(kw) or library_distributions(**kw))
    component_scan._first_scan.cache_clear()  # as in a new process
    for _ in range(3):
        at = AppTest.from_string(PAGE).run()
        assert not at.exception and at.markdown[0].value == "one"
    assert len(reads) == 1


def test_the_remembered_scan_is_what_the_librarys_scan_finds():
    assert component_scan.remembered_scan() == component_scan.LIBRARY_SCAN()
