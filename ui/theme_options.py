"""The theme's config options, read once per reading of the config instead of on every run.

Streamlit starts every run, a slider step's fragment rerun included, with a ``new_session`` message that carries
the theme. It fills it from six config sections (``[theme]``, ``[theme.light]``, ``[theme.dark]`` and their
sidebars), and for each it calls ``config.get_options_for_section``, which goes through every option Streamlit
has to pick those of that section: a visible share of the server's CPU under a class (docs/performance.md).

Theme options cannot be set from a script (``st.set_option`` refuses them); they change only when Streamlit reads
its config (at start-up, and again when it sees the file change). `read_theme_once` wraps
``config.get_options_for_section`` so that a theme section's options are looked up once and a copy of them is
returned afterwards, and forgets them whenever Streamlit has read its config. Any other section is looked up as
before. Installed by the server's start-up (`ui.warmup.lifespan`), not on import; the tests compare the messages
with Streamlit's own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from streamlit import config

#: Streamlit's own lookup, as imported (tests swap it back in to compare).
STREAMLIT_LOOKUP: Callable[[str], dict[str, Any]] = config.get_options_for_section

_sections: dict[str, dict[str, Any]] = {}
_readings = 0  # how many times the theme was forgotten: a lookup begun before that is not kept
_lock = threading.Lock()  # never held while Streamlit's lookup runs: that takes Streamlit's config lock
_installed = False


def options_for_section(section: str) -> dict[str, Any]:
    """``config.get_options_for_section``: the options of `section` by name, a theme section's remembered."""
    if section != "theme" and not section.startswith("theme."):
        return STREAMLIT_LOOKUP(section)
    with _lock:
        options, reading = _sections.get(section), _readings
    if options is None:
        options = STREAMLIT_LOOKUP(section)
        with _lock:
            if reading == _readings:
                _sections[section] = options
    return dict(options)


def forget_theme() -> None:
    """Drop the remembered sections (Streamlit calls it once it has read its config, holding its config lock)."""
    global _readings
    with _lock:
        _sections.clear()
        _readings += 1


def read_theme_once() -> None:
    """Install `options_for_section` in Streamlit's config module, and forget the theme whenever the config is
    read again (idempotent)."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    config.on_config_parsed(forget_theme, force_connect=True)
    config.get_options_for_section = options_for_section
