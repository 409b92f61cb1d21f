"""`ui.patches`: every patch guarded by its library's version, installed once, and the app's charts the same with
and without them."""

from __future__ import annotations

import importlib
import json
import logging

import pytest

from devtools.appserver import router_pages
from tests.helpers.apptest import charts_built_anew
from tests.helpers.fresh_process import fresh_python
from ui import patches
from ui.patches import PATCHES, apply, install, remove, switched_off, without_patches

#: Every page of the router, read from streamlit_app.py: a new page is compared as soon as it is routed.
PAGES = [page.name for page in router_pages()]


def library_functions() -> dict[str, object]:
    """What each patched attribute holds right now, by ``module.attribute``."""
    return {f"{p.module}.{a}": getattr(importlib.import_module(p.module), a) for p in PATCHES for a in p.replacements}


def as_text(charts: list) -> str:
    """Charts (specs and their data) as the JSON text the browser would read."""
    return json.dumps(charts, sort_keys=True)


@pytest.fixture
def lines(monkeypatch) -> list[str]:
    """The lines written to the ``attention`` log while the test runs."""
    written: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            written.append(record.getMessage())

    handler = Collect(logging.INFO)
    patches.log.addHandler(handler)
    monkeypatch.setattr(patches.log, "level", logging.INFO)
    yield written
    patches.log.removeHandler(handler)


def test_install_applies_every_patch_once():
    assert install() == {p.name: "applied" for p in PATCHES}
    installed = library_functions()
    assert all(installed[f"{p.module}.{a}"] is f for p in PATCHES for a, f in p.replacements.items())
    assert install() == {p.name: "applied" for p in PATCHES} and library_functions() == installed


@pytest.mark.parametrize("page", PAGES)
def test_every_page_draws_the_same_charts_and_data_without_the_patches(page):
    install()
    ours = charts_built_anew(page)
    with without_patches():
        own = library_functions()
        altairs = charts_built_anew(page)
        assert library_functions() == own, "the run put patches back"
    assert not set(own.values()) & {f for p in PATCHES for f in p.replacements.values()}
    assert as_text(ours) == as_text(altairs)  # as text: in Python, True == 1 and 1 == 1.0


@pytest.mark.parametrize("patch", PATCHES, ids=lambda p: p.name)
def test_on_another_version_a_patch_leaves_its_library_alone_and_says_so_once(patch, lines):
    install()
    remove(patch)
    before = library_functions()
    try:
        reason = apply(patch, version="0.0.1")
        assert library_functions() == before
    finally:
        apply(patch)
    assert reason == f"{patch.library} 0.0.1 is installed, the patch was written for {patch.version}"
    assert len(lines) == 1 and patch.name in lines[0] and reason in lines[0]


@pytest.mark.parametrize("patch", PATCHES, ids=lambda p: p.name)
def test_a_patch_whose_target_is_missing_leaves_its_library_alone_and_says_so_once(patch, lines, monkeypatch):
    install()
    remove(patch)
    module = importlib.import_module(patch.module)
    first, *others = patch.replacements
    monkeypatch.delattr(module, first)
    try:
        reason = apply(patch)
        assert all(getattr(module, a) is patch.original(a) for a in others)  # nothing replaced
    finally:
        monkeypatch.undo()
        apply(patch)
    assert reason == f"{patch.module} has no {first}"
    assert len(lines) == 1 and reason in lines[0]


def test_the_environment_switches_patches_off_by_name(lines):
    assert switched_off("altair_walks, streamlit_theme") == {"altair_walks", "streamlit_theme"}
    assert switched_off("all") == {p.name for p in PATCHES}
    assert switched_off("") == set() and lines == []
    assert switched_off("altair_walks,no_such_patch") == {"altair_walks"}
    assert len(lines) == 1 and "no_such_patch" in lines[0]


@pytest.mark.router_wide  # every page in one test: docs/adding-a-page.md's quick check selects it
def test_the_app_runs_on_other_library_versions_without_any_patch():
    """A fresh process whose libraries all report another version: each patch writes one line, none applies, and
    every page still draws its charts."""
    out = fresh_python(
        "import logging, importlib\n"
        "from ui import patches\n"
        "patches.installed_version = lambda library: '99.0'\n"
        "said = []\n"
        "class H(logging.Handler):\n"
        "    def emit(self, record): said.append(record.getMessage())\n"
        "patches.log.addHandler(H())\n"
        "before = {(p.module, a): getattr(importlib.import_module(p.module), a) for p in patches.PATCHES"
        " for a in p.replacements}\n"
        "from tests.helpers.apptest import run_page\n"
        "from devtools.appserver import router_pages\n"
        "for page in router_pages():\n"
        "    at = run_page(page.file)\n"
        "    assert not at.exception, (page.name, at.exception)\n"
        "after = {(m, a): getattr(importlib.import_module(m), a) for m, a in before}\n"
        "print(before == after, len(said), all('99.0' in v for v in patches.install().values()))\n"
        # The pages started work in the background (PyTorch's import, the sandbox's self-test, which runs the
        # reference solution): a process that exits in the middle of native code there aborts.
        "import threading\n"
        "for thread in threading.enumerate():\n"
        "    if thread is not threading.main_thread():\n"
        "        thread.join()\n"
    )
    assert out.split() == ["True", str(len(PATCHES)), "True"]
