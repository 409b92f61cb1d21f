"""Take it home: a page offers its view as a Jupyter notebook in its export menu (`notebooks` writes it).

A page calls `offer_notebook` in its body with the values its controls gave; nothing is built until the student
picks the notebook in the open menu and clicks download. Only the state is kept on every run: `notebooks` (and
nbformat) are imported when the file is made.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import streamlit as st

from notebooks.values import writable
from ui.display import MenuFile, offer_file
from ui.url_state import share_link

#: Session-state key: the last state of each page that could be written as data, ``{page: state}``.
LAST_WRITABLE = "_notebook_last_writable"
#: What the notebook says when the view's state could not be written and the last one that could is exported.
NOT_WRITABLE_NOTE = ("The view in the app held a value that cannot be written as data, so this notebook is "
                     "the last view of the page that could be.")


def offer_notebook(page: str, **state: Any) -> None:
    """Offer the view as a notebook (``<page>.ipynb``) first in the page's export menu.

    `state` holds every control's value as plain data (numbers, text, lists). A state that cannot be written as
    data (a NaN, an object) is replaced by the session's last one that could, and the notebook says so; with
    none, the page offers no notebook.
    """
    last = st.session_state.setdefault(LAST_WRITABLE, {})
    note = ""
    if writable(state):
        last[page] = dict(state)
    elif page in last:
        state, note = last[page], NOT_WRITABLE_NOTE
    else:
        return
    offer_file(MenuFile("Notebook (.ipynb)", f"{page}.ipynb",
                        "application/x-ipynb+json", functools.partial(_ready, page, dict(state), note)))


def _ready(page: str, state: Mapping[str, Any], note: str) -> Callable[[], str]:
    """The notebook's maker, with the link to this view (read now, in the script's run)."""
    return functools.partial(notebook_file, page, state, share_link(st.context.url), note)


def notebook_file(page: str, state: Mapping[str, Any], link: str, note: str) -> str:
    """The ``.ipynb`` file's text (run when the download button is clicked)."""
    from notebooks import notebook_text  # nbformat's import waits for the first notebook asked for

    return notebook_text(page, state, link, note)
