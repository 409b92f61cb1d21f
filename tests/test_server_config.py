"""The server settings `streamlit run streamlit_app.py` picks up from `.streamlit/config.toml`."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest
from streamlit import config

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def project_config(monkeypatch):
    """Streamlit's options as parsed from the project's folder (where `streamlit run` is started)."""
    monkeypatch.chdir(ROOT)
    for name in [k for k in os.environ if k.startswith("STREAMLIT_")]:
        monkeypatch.delenv(name)
    config.get_config_options(force_reparse=True)
    yield config.get_option
    monkeypatch.undo()
    config.get_config_options(force_reparse=True)


def test_no_forced_garbage_collection_after_each_run(project_config):
    # A forced gc.collect() after every run delays the "script finished" message by ~100 ms on every
    # slider step (docs/performance.md); Python's generational GC keeps running.
    assert project_config("runner.postScriptGC") is False


def test_headless_without_usage_statistics(project_config):
    assert project_config("server.headless") is True
    assert project_config("browser.gatherUsageStats") is False


def test_no_source_file_watching(project_config):
    # Watching polls every source file from background threads and rescans the imported modules on the
    # event loop after a run that imported new ones (0.3 s once PyTorch is in): not for an app that is run,
    # not edited. The browser tests and the benchmark run the server with this file's settings.
    assert project_config("server.fileWatcherType") == "none"


@pytest.mark.router_wide  # every page in one test: docs/adding-a-page.md's quick check selects it
def test_no_magic_and_no_page_that_needs_it(project_config):
    # Magic st.writes any expression statement standing alone, other than calls and docstrings, and costs
    # each script an extra pass over its syntax tree on its first run. Nothing here relies on it.
    assert project_config("runner.magicEnabled") is False
    scripts = [ROOT / "streamlit_app.py", *sorted((ROOT / "app_pages").glob("*.py"))]
    for script in scripts:
        tree = ast.parse(script.read_text())
        for node in ast.walk(tree):
            body = getattr(node, "body", None)  # a lambda's body is an expression, not statements
            for i, stmt in enumerate(body if isinstance(body, list) else []):
                if not isinstance(stmt, ast.Expr) or isinstance(stmt.value, ast.Call | ast.Await | ast.Yield):
                    continue
                docstring = i == 0 and isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef)
                assert docstring and isinstance(stmt.value, ast.Constant), (
                    f"{script.name}:{stmt.lineno} is an expression standing alone, which only magic would show")
    assert len(scripts) > 10
