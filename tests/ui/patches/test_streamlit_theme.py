"""`ui.patches.streamlit_theme`: the theme's options looked up once per reading of the config, the same messages."""

from __future__ import annotations

import pytest
from streamlit import config
from streamlit.proto.NewSession_pb2 import CustomThemeConfig
from streamlit.runtime import app_session

from ui.patches import apply, install, remove
from ui.patches import streamlit_theme as theme_options

SECTIONS = ["theme", "theme.light", "theme.dark", "theme.sidebar", "theme.light.sidebar", "theme.dark.sidebar"]


@pytest.fixture
def lookups(monkeypatch) -> list[str]:
    """The sections looked up in Streamlit's config, in order; nothing remembered at the start."""
    looked_up: list[str] = []
    install()
    originals = theme_options.PATCH.originals
    streamlits = originals["get_options_for_section"]
    streamlits("theme")  # Streamlit reads its config on the first lookup, which forgets the theme: done before
    monkeypatch.setitem(originals, "get_options_for_section",
                        lambda section: looked_up.append(section) or streamlits(section))
    theme_options.forget_theme()
    yield looked_up
    theme_options.forget_theme()


def test_a_theme_section_is_looked_up_once_and_handed_out_as_a_copy(lookups):
    first = theme_options.options_for_section("theme")
    first["primaryColor"] = "#000000"  # a caller's change stays its own
    streamlits = theme_options.PATCH.original("get_options_for_section")
    assert theme_options.options_for_section("theme") == streamlits("theme")
    assert theme_options.options_for_section("theme.sidebar") == streamlits("theme.sidebar")
    theme_options.options_for_section("server")
    theme_options.options_for_section("server")
    assert lookups == ["theme", "theme", "theme.sidebar", "theme.sidebar", "server", "server"]


def test_reading_the_config_again_forgets_the_theme(lookups, monkeypatch):
    remove(theme_options.PATCH)
    assert apply(theme_options.PATCH) is None
    assert config.get_options_for_section is theme_options.options_for_section
    config.get_options_for_section("theme")
    config.get_options_for_section("theme")
    config._on_config_parsed.send()  # what Streamlit does once it has read its config files
    config.get_options_for_section("theme")
    assert lookups == ["theme", "theme"]


@pytest.mark.parametrize("section", SECTIONS)
def test_the_session_message_carries_streamlits_own_theme(section, lookups, monkeypatch):
    """Streamlit's new-session message is filled from each section as before (the project's config.toml sets
    `[theme]`; the other sections are empty), also when the options come from memory the second time."""
    own = CustomThemeConfig()
    app_session._populate_theme_msg(own, section)
    monkeypatch.setattr(config, "get_options_for_section", theme_options.options_for_section)
    for _ in range(2):
        ours = CustomThemeConfig()
        app_session._populate_theme_msg(ours, section)
        assert ours.SerializeToString() == own.SerializeToString()
    assert lookups == [section]
    if section == "theme":
        assert own.primary_color == "#1f5fa8"
