"""The real model, all-MiniLM-L6-v2, loaded once per server process, and the heads of it that follow a habit on one
fixed sentence: what a lesson page points to when it says that a trained model's heads specialise.

The heads are found from the model's numbers (`pretrained.patterns.found_heads`: the share of attention each head puts
where a habit says, on `REFERENCE_TEXT`), once per process, and linked to the real-model page opened on them.
"""

from __future__ import annotations

import functools

import streamlit as st

from pretrained.model import PretrainedModel, load_model, run_model
from pretrained.patterns import FoundHead, found_heads

#: The real-model page, and the sentence it opens with: the one the heads are found on.
PAGE = "app_pages/pretrained.py"
REFERENCE_TEXT = "The cat sat on the mat because it was tired."
#: The habits (`pretrained.patterns.PATTERNS`) whose strongest head a lesson page points to, in this order, in groups:
#: of a group, the habit whose head follows it most (a head at rest may park on `[CLS]` or on `[SEP]`).
LINKED_HABITS: tuple[tuple[str, ...], ...] = (("previous token",), ("[CLS]", "[SEP]"))


@st.cache_resource(show_spinner=False)
def get_model() -> PretrainedModel:
    """The model, loaded once per server process, lazily (when a page first needs it)."""
    return load_model()


@functools.lru_cache(maxsize=1)
def specialised_heads() -> tuple[FoundHead, ...]:
    """For each group of `LINKED_HABITS`, the head that follows one of its habits most on `REFERENCE_TEXT`, computed
    once per process; empty when the model cannot be loaded here."""
    try:
        run = run_model(REFERENCE_TEXT, get_model())
    except (ImportError, OSError, ValueError):  # the model's package missing or unreadable
        return ()
    groups = [found_heads(run, group) for group in LINKED_HABITS]
    return tuple(max(found, key=lambda h: h.score) for found in groups if found)


def page_query(head: FoundHead) -> dict[str, str]:
    """The real-model page's query parameters (`text`, `layer`, `head`, the last two 1-based) that open it on `head`
    in the text it was found in."""
    return {"text": head.text, "layer": str(head.layer + 1), "head": str(head.head + 1)}
