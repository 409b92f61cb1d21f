"""The theme's config options, read once per reading of the config instead of on every run.

Streamlit starts every run, a slider step's fragment rerun included, with a ``new_session`` message that carries
the theme. It fills it from six config sections (``[theme]``, ``[theme.light]``, ``[theme.dark]`` and their
sidebars), and for each it calls ``config.get_options_for_section``, which goes through every option Streamlit
has to pick those of that section: a visible share of the server's CPU under a class (docs/performance.md).

Theme options cannot be set from a script (``st.set_option`` refuses them); they change only when Streamlit reads
its config (at start-up, and again when it sees the file change). The patch wraps
``config.get_options_for_section`` so that a theme section's options are looked up once and a copy of them is
returned afterwards, and forgets them whenever Streamlit has read its config. Any other section is looked up as
before. The tests compare the messages with Streamlit's own.
"""

from __future__ import annotations

import threading
from types import ModuleType
from typing import Any

from ui.patches import Patch

_sections: dict[str, dict[str, Any]] = {}
_readings = 0  # how many times the theme was forgotten: a lookup begun before that is not kept
_lock = threading.Lock()  # never held while Streamlit's lookup runs: that takes Streamlit's config lock


def options_for_section(section: str) -> dict[str, Any]:
    """``config.get_options_for_section``: the options of `section` by name, a theme section's remembered."""
    if section != "theme" and not section.startswith("theme."):
        return PATCH.original("get_options_for_section")(section)
    with _lock:
        options, reading = _sections.get(section), _readings
    if options is None:
        options = PATCH.original("get_options_for_section")(section)
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


def _forget_on_reading(config: ModuleType) -> None:
    """Forget the theme whenever Streamlit reads its config again (connecting twice is connecting once)."""
    config.on_config_parsed(forget_theme, force_connect=True)


PATCH = Patch(name="streamlit_theme", library="streamlit", version="1.67.0", module="streamlit.config",
              replacements={"get_options_for_section": options_for_section}, requires=("on_config_parsed",),
              on_install=_forget_on_reading)
