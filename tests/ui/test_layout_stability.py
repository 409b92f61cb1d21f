"""A slider step or a click on a chart keeps every element of the page in its place.

Streamlit's front end matches a page's elements by position. If an element appears or disappears, every
later element has a new position and is drawn from scratch, charts included: on the positional-encoding
page that doubled the time from a key press to the repaint. Elements that come and go therefore sit in a
`ui.layout.fixed_slot`. These tests compare the page's element layout (position and type of every
element) before and after one step of each slider, and before and after a click on a clickable chart:
elements may be added or removed (inside a slot, or at the end of a block) but none may move.
"""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers.apptest import run_page
from tests.helpers.registry import declarations

PAGES = sorted(p.stem for p in (Path(__file__).resolve().parents[2] / "app_pages").glob("*.py"))
#: Controls that change the page's structure on purpose (``structural`` of the page's `PageTests`).
STRUCTURAL = {(page, key): why for page, shared in declarations().items() for key, why in shared.structural.items()}
#: A click on a clickable chart, for each page that declares one (``click`` of its `PageTests`).
CLICKS = {page: shared.click for page, shared in declarations().items() if shared.click}


def layout(at: AppTest) -> list[tuple[tuple[int, ...], str]]:
    """(delta path, element type) of every element and container, in page order."""
    out: list[tuple[tuple[int, ...], str]] = []

    def walk(node, path: tuple[int, ...]) -> None:
        out.append((path, str(getattr(node, "type", ""))))
        children = getattr(node, "children", None) or {}
        for k, child in (children.items() if isinstance(children, dict) else enumerate(children)):
            walk(child, (*path, k))

    walk(at._tree, ())
    return out


def next_value(widget) -> object:
    """The value one keyboard step from the current one (a step back at the top of the range)."""
    if widget.type == "slider":
        step = widget.step or 1
        up = widget.value + step
        return type(widget.value)(up if up <= widget.max else widget.value - step)
    values = [type(widget.value)(o) for o in widget.options]  # a select_slider's options, as text
    i = values.index(widget.value)
    return values[i + 1] if i + 1 < len(values) else values[i - 1]


def moved(before: AppTest, after: AppTest) -> list[tuple[tuple[int, ...], str]]:
    """Elements of the smaller layout that the other one does not have at the same position: those that moved."""
    small, large = sorted((set(layout(before)), set(layout(after))), key=len)
    return sorted(small - large)


def test_moved_finds_an_element_pushed_down_by_a_new_one():
    class Node:
        def __init__(self, type_: str, children: list | None = None):
            self.type, self.children = type_, children

    class Page:  # stands in for AppTest: `layout` only reads `_tree`
        def __init__(self, *types: str):
            self._tree = Node("root", [Node(t) for t in types])

    assert moved(Page("header", "chart"), Page("header", "chart", "caption")) == []  # added at the end
    assert moved(Page("header", "chart"), Page("header", "caption", "chart")) == [((1,), "chart")]


@pytest.mark.parametrize("page", PAGES)
def test_one_slider_step_keeps_every_element_in_place(page):
    before = run_page(f"app_pages/{page}.py")
    assert not before.exception
    sliders = [w for w in (*before.slider, *before.select_slider) if w.key and (page, w.key) not in STRUCTURAL]
    for widget in sliders:
        after = run_page(f"app_pages/{page}.py")
        kind = after.slider if widget.type == "slider" else after.select_slider
        new = next_value(widget)
        kind(key=widget.key).set_value(new).run()
        assert not after.exception
        assert not moved(before, after), (
            f"{page}: moving {widget.key!r} from {widget.value!r} to {new!r} adds or removes an element, so every "
            "element after it is redrawn from scratch; put the optional element in ui.layout.fixed_slot()")


@pytest.mark.parametrize("page", CLICKS)
def test_a_click_on_a_chart_keeps_every_element_in_place(page):
    before = run_page(f"app_pages/{page}.py")
    at = CLICKS[page](run_page(f"app_pages/{page}.py"))
    assert not at.exception
    captions = {c.value for c in at.caption}
    assert captions - {c.value for c in before.caption}, "the click was not seen: no caption about the clicked cell"
    assert not moved(before, at), f"{page}: the caption about the clicked cell shifts the elements after it"
