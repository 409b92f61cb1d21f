"""Take it home: a page offers its view as a Jupyter notebook in its export menu (`notebooks` writes it).

A page calls `offer_notebook` in its body with the values its controls gave; nothing is built until the student
picks the notebook in the open menu and clicks download. A run only checks the state (`notebooks.settings_of`);
nbformat is imported in the background a few seconds after the first page that offers a notebook.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import streamlit as st

from notebooks import notebook_text, settings_of
from notebooks.values import NotWritableError, md_code
from ui.display import MenuFile, offer_file
from ui.url_state import share_link
from ui.warmup import import_in_background

#: Session-state key: each page's last view that its notebook could write, as its settings, ``{page: settings}``.
LAST_WRITABLE = "_notebook_last_writable"
#: What the notebook says when the view's state could not be written and the last one that could is exported.
REJECTED_NOTE = ("The view's own input had an edit that could not be used ({}); the page showed its last valid "
                 "input, and so does this notebook.")
NOT_WRITABLE_NOTE = ("The view in the app held a value that cannot be written as data, so this notebook is "
                     "the last view of the page that could be.")


#: The export menu's help on the notebook.
HELP = ("The view as a Jupyter notebook: NumPy and PyTorch code that sets these controls and recomputes every number "
        "shown, to run at home or in Colab.")


def offer_notebook(page: str, *, rejected: str = "", **state: Any) -> None:
    """Offer the view as a notebook (``<page>.ipynb``) first in the page's export menu.

    `state` holds every control's value as plain data (numbers, text, lists). A state the page's notebook cannot
    write as data (a NaN, an object, heads that do not divide d_model) is replaced by the session's last one that
    it could, and the notebook says so; with none, the page offers no notebook.

    `rejected`: why the page refused its own input's last edit (it shows the last valid input, which `state`
    holds); the notebook says so too.
    """
    import_in_background("nbformat.v4", delay_s=3.0)  # once per process: a first download then waits for nothing
    last = st.session_state.setdefault(LAST_WRITABLE, {})
    note = REJECTED_NOTE.format(md_code(rejected)) if rejected else ""
    try:
        settings = last[page] = settings_of(page, state)
    except NotWritableError:
        if page not in last:
            return
        settings, note = last[page], NOT_WRITABLE_NOTE
    offer_file(MenuFile("Notebook (.ipynb)", f"{page}.ipynb", "application/x-ipynb+json",
                        functools.partial(_ready, page, settings, note), help=HELP))


def _ready(page: str, settings: Mapping[str, Any], note: str) -> Callable[[], str]:
    """The notebook's maker, with the link to this view (read now, in the script's run)."""
    return functools.partial(notebook_file, page, settings, share_link(st.context.url), note)


def notebook_file(page: str, settings: Mapping[str, Any], link: str, note: str) -> str:
    """The ``.ipynb`` file's text (run when the download button is clicked)."""
    return notebook_text(page, settings, link, note)
