"""The sidebar's page list (`ui.navigation`), drawn by the router from the pages it routes.

The browser checks what a screen reader and a phone get of it (tests/browser/test_axe.py, test_phone.py,
test_keyboard.py); these check what the router sends, headless.
"""

from __future__ import annotations

import pytest

from devtools.appserver import router_pages
from tests.helpers.apptest import run_page
from ui.navigation import CURRENT_KEY, SECTION_KEY_PREFIX, section_key

SECTIONS = ["The lesson", "Build this", "Beyond the lesson"]


def blocks(node):
    """Every block under `node`, depth first, in the order drawn."""
    for child in getattr(node, "children", {}).values():
        if type(child).__name__ == "Block":
            yield child
            yield from blocks(child)


def links(node) -> list:
    """The page links under `node`, in the order drawn."""
    found = []
    for child in getattr(node, "children", {}).values():
        found += [child] if type(child).__name__ == "PageLink" else links(child)
    return found


def keyed(at, key: str) -> list:
    """The sidebar's blocks keyed `key` (a keyed container's id ends in ``-`` and its key)."""
    return [b for b in blocks(at.sidebar) if b.proto.id.endswith("-" + key)]


def test_section_keys_are_the_headings_in_words():
    assert section_key("Beyond the lesson") == SECTION_KEY_PREFIX + "beyond_the_lesson"
    assert section_key("Build this: the exercise!") == SECTION_KEY_PREFIX + "build_this_the_exercise"


@pytest.mark.router_wide  # every page in one test: docs/adding-a-page.md's quick check selects it
def test_every_routed_page_has_one_link_under_its_section_in_the_routers_order():
    """The router's page list is the one source: a page added to it has its link, with its title and icon."""
    at = run_page(None)
    assert not at.exception
    routed = router_pages()
    sidebar = links(at.sidebar)
    assert [(link.proto.label, link.proto.page) for link in sidebar] == [(p.title, p.url_path) for p in routed]
    assert all(link.proto.icon.startswith(":material/") for link in sidebar)
    headings = [m.value.removeprefix("## ") for m in at.sidebar.markdown if m.value.startswith("## ")]
    assert headings == SECTIONS
    per_section = [[link.proto.label for link in links(keyed(at, section_key(s))[0])] for s in SECTIONS]
    assert sum(per_section, []) == [p.title for p in routed]
    assert per_section[1] == ["Build this: the exercise"]
    assert {"Worked example", "Masked self-attention"} <= set(per_section[0])


@pytest.mark.parametrize("page", ["", "multi_head", "attention_cost"])
def test_the_current_pages_link_alone_is_marked(page):
    rp = next(p for p in router_pages() if p.url_path == page)
    at = run_page(None if rp.url_path == "" else rp.file)
    assert not at.exception
    current = keyed(at, CURRENT_KEY)
    assert len(current) == 1
    assert [link.proto.label for link in links(current[0])] == [rp.title]



def test_the_sidebar_starts_with_the_landing_page_and_follows_the_lessons_order():
    """A visitor lands on the sidebar's first page, and the encoder/decoder split comes before the mask, which the
    lesson introduces inside the decoder."""
    routed = [p.file for p in router_pages()]
    assert router_pages()[0].url_path == ""  # the landing page, served at "/"
    assert routed.index("app_pages/cross_attention.py") < routed.index("app_pages/masked_attention.py")
    assert routed.index("app_pages/soft_lookup.py") < routed.index("app_pages/scaled_attention.py")


@pytest.mark.parametrize("page, first", [("app_pages/decoder.py", "Masked self-attention"),
                                         ("app_pages/pretrained.py", "Multi-head attention")])
def test_the_pages_beyond_the_lesson_say_which_page_to_read_first(page, first):
    """The pages away from their concepts in the sidebar name the page to read first, by its sidebar title."""
    at = run_page(page)
    assert not at.exception
    assert first in {p.title for p in router_pages()}
    assert any(f"Read *{first}* first" in m.value for m in at.markdown)
