"""Which Chromium the tests and the benchmarks start (`devtools.browser.launch`)."""

from __future__ import annotations

import pytest

from devtools import browser


class FakePlaywright:
    """Records what `launch` asks Playwright to start."""

    def __init__(self) -> None:
        self.chromium = self
        self.launched: dict = {}

    def launch(self, **options):
        self.launched = options
        return options


@pytest.fixture
def binaries(tmp_path, monkeypatch):
    shell, full = tmp_path / "chromium-headless-shell", tmp_path / "chromium"
    full.touch()
    monkeypatch.setattr(browser, "HEADLESS_SHELL", str(shell))
    monkeypatch.setattr(browser, "CHROMIUM", str(full))
    return shell, full


def test_the_tests_use_the_headless_shell_when_it_is_installed(binaries):
    shell, _ = binaries
    shell.touch()
    launched = browser.launch(FakePlaywright(), for_tests=True)
    assert launched["executable_path"] == str(shell)
    assert "--headless=new" not in launched["args"]  # the shell's only mode; the flag belongs to the full browser
    assert browser.chromium_available()


def test_without_the_shell_the_tests_use_the_full_browser_in_its_headless_mode(binaries):
    _, full = binaries
    launched = browser.launch(FakePlaywright(), for_tests=True)
    assert launched["executable_path"] == str(full) and "--headless=new" in launched["args"]
    full.unlink()
    assert not browser.chromium_available()


def test_the_benchmarks_time_the_full_browser_even_where_the_shell_is_installed(binaries):
    shell, full = binaries
    shell.touch()
    launched = browser.launch(FakePlaywright())
    assert launched["executable_path"] == str(full) and "--headless=new" in launched["args"]
