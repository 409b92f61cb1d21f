"""A page's layout: its interactive body as a fragment, its text, the real code, the share link.

`introduction` writes a page's title, text and formula; `page_fragment` runs everything below it, so that a
widget step reruns only the page; `controls_row` lines up its controls; `section` and `explain` write its text
(hidden in presenter mode, where the lecturer speaks it); `show_source` shows the real code being taught;
`link_slot` and `show_share_link` keep the sidebar's link to exactly this view.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import streamlit as st
from streamlit.delta_generator import DeltaGenerator
from streamlit.errors import StreamlitInvalidLayoutContextError

from ui.display import one_export_menu
from ui.turns import turn
from ui.url_state import presenter_mode, share_link


def fixed_slot() -> Any:
    """A container for elements that come and go with a slider, e.g. ``with fixed_slot(): if odd: st.caption(…)``.

    Streamlit's front end matches a page's elements by position. An element that appears or disappears
    shifts every later one, so each of them is drawn from scratch, charts included. Inside a container that
    is always there, the change stays inside it.
    """
    return st.container()


@functools.lru_cache(maxsize=256)
def _source(obj: Callable[..., Any] | type) -> str:
    """`inspect.getsource`, once per object per process (it re-reads and re-parses the file each call)."""
    return inspect.getsource(obj)


def source_key(*objects: Callable[..., Any] | type) -> str:
    """Session-state key of the "Show the code" expander for `objects`: ``code:`` and a short hash of their names.

    Stable across runs and sessions, distinct for each expander of a page, and never part of the URL.
    """
    names = ",".join(f"{obj.__module__}.{obj.__qualname__}" for obj in objects)
    return "code:" + hashlib.sha1(names.encode()).hexdigest()[:8]


def show_source(*objects: Callable[..., Any] | type, title: str = "Show the code") -> None:
    """An expander with the real source of the `core` functions being taught (never a copy).

    The code is sent only while the expander is open (opening it reruns the page's fragment). A closed
    expander's content would still be sent and syntax-highlighted by the browser, on a cold start too,
    for code nobody had asked to see yet (measured in docs/performance.md).
    """
    expander = st.expander(title, icon=":material/code:", key=source_key(*objects), on_change="rerun")
    if not expander.open:
        return
    with expander:
        for obj in objects:
            st.caption(f"`{obj.__module__}.{obj.__qualname__}`")
            st.code(_source(obj), language="python")


def introduction(title: str, text: str, formula: str = "", *, keep_text: bool = False) -> None:
    """A page's opening: its title, what it is about, and the formula it teaches (`st.latex`).

    As with `explain`, presenter mode hides the text, unless `keep_text` (a page whose opening stays on the
    projector too).
    """
    st.title(title)
    if keep_text:
        st.markdown(text)
    else:
        explain(text)
    if formula:
        st.latex(formula)


def controls_row() -> Any:
    """A row for a page's controls, aligned on their bottom edge: ``with controls_row(): seed = seed_slider()``."""
    return st.container(horizontal=True, vertical_alignment="bottom")


_MARKDOWN_SPECIALS = str.maketrans({c: "\\" + c for c in "\\`*_[]$<>~|:"})
_CODE_SPAN = re.compile(r"(`[^`\n]+`)")


def as_markdown(text: str) -> str:
    """Plain text (a check's message, an error a student's code raised) as Markdown that shows it as written.

    Inside `backtick` spans the text is code already; elsewhere every character Markdown or Streamlit would
    interpret (emphasis, links, ``$`` for LaTeX, ``:red[…]`` colour directives) is escaped.
    """
    return "".join(part if _CODE_SPAN.fullmatch(part) else part.translate(_MARKDOWN_SPECIALS)
                   for part in _CODE_SPAN.split(text))


def static_table(columns: dict[str, Sequence[Any]], formats: dict[str, str] | None = None) -> None:
    """A small table that nobody sorts, as one Markdown element: ``{column title: values}``, in order.

    A value is shown with its column's format from `formats` (``"{:.4f}"``), or as text; numeric columns are
    right-aligned. Not ``st.table``: to format its numbers it needs a pandas Styler, which Streamlit renders to
    HTML again on every rerun, for text that can be sent as it is.
    """
    formats = formats or {}
    lengths = {len(values) for values in columns.values()}
    if len(lengths) > 1:
        raise ValueError(f"the columns have different lengths: {sorted(lengths)}")

    def cell(title: str, value: Any) -> str:
        text = formats[title].format(value) if title in formats else str(value)
        return as_markdown(text).replace("\n", " ")

    numeric = {title: all(isinstance(v, int | float | np.number) and not isinstance(v, bool) for v in values)
               for title, values in columns.items()}
    titles = list(columns)
    rows = [[as_markdown(title) for title in titles], ["---:" if numeric[title] else ":---" for title in titles]]
    rows += [[cell(title, value) for title, value in zip(titles, row, strict=True)]
             for row in zip(*columns.values(), strict=True)]
    st.markdown("\n".join("| " + " | ".join(row) + " |" for row in rows))


#: The page that explains a whole block (attention, add & norm, feed-forward, add & norm), which every trained
#: model's layer is.
WHOLE_BLOCK_PAGE = "app_pages/transformer_block.py"


def whole_block_link(sentence: str) -> None:
    """One sentence saying that a page's layers are the whole-block page's block, and the link to that page."""
    st.caption(sentence)
    st.page_link(WHOLE_BLOCK_PAGE, label="The whole Transformer block", icon=":material/layers:")


def explain(markdown: str) -> None:
    """A paragraph of explanation; hidden in presenter mode, where the lecturer says it instead.

    Hidden, it still takes its place, as an empty element: presenter mode must not move any later element.
    Streamlit's front end matches elements by position, so a bound widget that moved is drawn anew while its
    old copy stays until the run ends; removing that copy then unbinds the widget's key from the URL (the two
    share one widget id), and the widget's later changes reach neither the URL nor the share link.
    """
    if presenter_mode():
        st.empty()
    else:
        st.markdown(markdown)


def more_detail(topic: str) -> DeltaGenerator:
    """A closed expander, "More detail: <topic>", for what goes deeper than the page's idea: a projector shows the
    idea first, and a student opens the rest."""
    return st.expander(f"More detail: {topic}", icon=":material/info:")


def section(title: str, text: str = "", formula: str = "", *, keep_text: bool = False,
            stages: Sequence[tuple[str, str, str]] = ()) -> None:
    r"""A section's heading, explanation and display formula, sent as a single Markdown element.

    Three elements would look the same, but the browser pays for each element on every rerun, and a page with
    six sections would redraw eighteen of them on every slider step (docs/performance.md). The heading is a
    Markdown ``##`` (what ``st.header`` draws); the formula is KaTeX between ``$$``, as in ``st.latex``.
    As with `explain`, presenter mode leaves the explanation to the lecturer, unless `keep_text` (a page's
    text that stays on the projector too, as ``st.markdown`` would). `stages` follow in the same element, each
    ``(title, text, formula)`` under a ``###`` heading (the steps one chart draws); no `title`, no ``##`` heading.
    """
    shown = keep_text or not presenter_mode()
    parts = [f"## {title}"] if title else []
    for k, (heading, words, display) in enumerate(((title, text, formula), *stages)):
        if k:
            parts.append(f"### {heading}")
        if words and shown:
            parts.append(words)
        if display:
            parts.append(f"$$\n{display}\n$$")
    st.markdown("\n\n".join(parts))


#: Session-state key of the sidebar slot that shows the share link. The router fills it in on every full run
#: (`link_slot`); a page's fragment writes the link into it (`page_fragment`). Not in the URL; nor is
#: ``copy_link``, the key of the link's Copy button (`link_slot`).
LINK_SLOT = "_link_slot"


# The share link: its text, written by the server, and a Copy button drawn by a components-v2 element.
# `st.code` (the obvious choice, with its own copy button) makes the browser load and run its syntax
# highlighter, a 1.5 MB script, for one line of plain text. The button's element never changes (no data):
# one whose data changed with the link was redrawn on every slider step. So the router draws it, under the
# link's slot, and a step sends only the link's text. It copies the address
# bar, which holds the same link (Streamlit keeps the URL's query in step with the bound widgets; the
# browser tests check both).
_COPY_LINK_HTML = '<button type="button" title="Copy the link to this view">Copy link</button>'


_COPY_LINK_CSS = """
button { font: inherit; font-size: 0.8rem; padding: 0.15rem 0.6rem; cursor: pointer; border-radius: 0.4rem;
         border: 1px solid var(--st-border-color, #d0d4da); background: var(--st-background-color, #fff);
         color: var(--st-text-color, inherit); }
button:hover { border-color: var(--st-primary-color, #1f5fa8); color: var(--st-primary-color, #1f5fa8); }
"""


_COPY_LINK_JS = """
export default function ({ parentElement }) {
  const button = parentElement.querySelector("button");
  button.onclick = async () => {
    const link = window.location.href;
    try {
      await navigator.clipboard.writeText(link);  // only in a secure context (https or localhost)
    } catch (err) {  // plain http on a lecture-hall network: copy through a selected text area
      const area = document.createElement("textarea");
      area.value = link;
      parentElement.appendChild(area);
      area.select();
      document.execCommand("copy");
      area.remove();
    }
    button.textContent = "Copied";
    setTimeout(() => { button.textContent = "Copy link"; }, 1500);
  };
}
"""


_copy_link_button = st.components.v2.component("copy_link", html=_COPY_LINK_HTML, css=_COPY_LINK_CSS,
                                               js=_COPY_LINK_JS)


def link_slot() -> None:
    """Reserve the share link's place here, with its Copy button under it (the router calls it in the sidebar).

    The page's fragment writes the link into the slot (`show_share_link`) on every step; the button never
    changes, so it is drawn on full runs only, and a step sends the link's one element.
    """
    st.session_state[LINK_SLOT] = st.empty()
    _copy_link_button(key="copy_link")


def show_share_link() -> bool:
    """Write the link to the current view into the slot the router reserved (nothing when there is none).

    False, with nothing written, when the running fragment may not write there (see `_reserve_link_slot`).
    """
    slot = st.session_state.get(LINK_SLOT)
    if slot is None:
        return True
    link = share_link(st.context.url)  # a real browser always has an address; AppTest has none
    try:
        slot.markdown(f"`{link}`" if link else "")
    except StreamlitInvalidLayoutContextError:
        return False
    return True


def _reserve_link_slot() -> None:
    """Let a nested fragment write the share link later, when it reruns alone.

    Streamlit lets a fragment rerun write outside its own body only into a container it also wrote to on the
    last full run of the app. So a nested fragment writes the sidebar's slot (empty: the outer fragment fills it
    with the link when it finishes) on every run it takes part in. A nested fragment that first appears during
    a rerun of its outer fragment (a section revealed by a step, or moved by one) cannot: Streamlit refuses.
    Then the app runs once in full, which gives every fragment of the page its place; this happens on the
    step that revealed or moved the section, and never twice in a row (a full run reserves every slot).
    """
    slot = st.session_state.get(LINK_SLOT)
    if slot is None:
        return
    try:
        slot.empty()
    except StreamlitInvalidLayoutContextError:
        st.rerun(scope="app")


#: How deep the running script is in nested `page_fragment` s (each session's script runs in its own thread).
_fragments = threading.local()


def page_fragment(body: Callable[..., None]) -> Callable[..., None]:
    """Run a page's interactive body as a fragment: a change to one of its widgets reruns only `body`.

    Use it on everything of a page below its title and introduction::

        @page_fragment
        def page_body() -> None:
            seed = seed_slider()
            ...

        page_body()

    A full run redraws the router's navigation and sidebar too, on every slider step. A fragment rerun
    sends only `body`'s elements. The one app-wide element that follows the page's widgets, the share
    link in the sidebar, is written by the fragment itself, after `body`, so it is never a step behind.
    Widgets outside the fragment (presenter mode, in the sidebar) still rerun the whole app.

    Fragments nest: a section whose widgets change nothing above or below it can be a `page_fragment`
    of its own, called from the page's with what it needs (a rerun of it alone reuses those arguments).
    Its widgets then rerun only that section. The link is written by the outermost fragment of a run:
    the page's on a page step, the section's when the section reruns alone. A page's fragment may hold
    only controls and two such sections one after the other, when neither's widgets change the other: a
    change of the controls reruns both, a step of a section's own widgets that section alone.

    `body` runs in one of the process's turns (`ui.turns`): a class's runs take turns at the core rather than all
    sharing it at once.

    Every chart `show_chart` draws in `body` is offered in one export menu, drawn after `body` (one
    element on every step instead of one per chart; see `export_menu`). A nested fragment's charts are
    in its own menu, which reruns with them.
    """

    @st.fragment
    @functools.wraps(body)
    def run(*args: Any, **kwargs: Any) -> None:
        depth = getattr(_fragments, "depth", 0)  # fragments of this script run already entered
        if depth > 0:
            _reserve_link_slot()
        _fragments.depth = depth + 1
        try:
            with turn(), one_export_menu(key=f"export_{body.__name__}"):  # its own charts only
                body(*args, **kwargs)
        finally:  # also after st.stop() in the body, so the link is always there
            _fragments.depth = depth
            if depth == 0 and not show_share_link():
                st.rerun(scope="app")  # see `_reserve_link_slot`: a fragment without its place in the sidebar

    return run
