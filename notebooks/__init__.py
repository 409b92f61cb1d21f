"""Take it home: a page's view as a Jupyter notebook that recomputes its numbers with NumPy and PyTorch.

No Streamlit, and none of this app's packages in the notebooks' code: each runs anywhere with
``pip install numpy torch pandas altair``. One module per page, each with its ``TITLE``, its ``settings(state)``
(the view's state as the values the first code cell sets; it raises on a state it cannot write) and its
``cells(nb)`` (everything after the header; a module's ``CHOOSES_CELLS`` names the settings that choose which
cells it holds, such as the stages revealed, passed to ``cells`` by name instead of set in the first cell)::

    text = notebook_text("multi_head", settings_of("multi_head", {"seed": 3, "heads": 4, ...}),
                         link="https://…/multi_head?seed=3&heads=4")

Only `notebook_text` and `build_notebook` import nbformat: checking a state (`settings_of`) is cheap enough for
every run of a page.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from notebooks.builder import NEEDS, Notebook, header
from notebooks.values import NotWritableError, writable

#: The pages that have a notebook, by their page name (``app_pages/<name>.py``; the module ``notebooks.<name>``).
PAGES = ("worked_example", "soft_lookup", "scaled_attention", "multi_head", "permutation", "positional_encoding",
         "masked_attention", "cross_attention", "exercise",
         "attention_cost", "pretrained", "transformer_block", "training", "decoder")


def settings_of(page: str, state: Mapping[str, Any]) -> dict[str, Any]:
    """The values `page`'s notebook sets for a view's `state` (its controls' values).

    Raises `NotWritableError` for a state the page's notebook cannot write as data, `KeyError` for a page without one.
    """
    if page not in PAGES:
        raise KeyError(f"the page {page!r} has no notebook.")
    try:
        settings = importlib.import_module(f"notebooks.{page}").settings(state)
    except (KeyError, TypeError, ValueError) as err:
        raise NotWritableError(f"the view's state cannot be written as data: {err}") from err
    if not writable(settings):
        raise NotWritableError(f"the view's state cannot be written as data: {settings!r}")
    return settings


def build_notebook(page: str, settings: Mapping[str, Any], link: str = "", note: str = "") -> Any:
    """The notebook (an ``nbformat.NotebookNode``) of `page` at `settings` (`settings_of`'s): its header (the
    page, the settings, `link`, `note`), then its cells."""
    module = importlib.import_module(f"notebooks.{page}")
    chooses = getattr(module, "CHOOSES_CELLS", ())
    nb = Notebook()
    header(nb, module.TITLE, page, settings, link, note, getattr(module, "NEEDS", NEEDS), chooses)
    module.cells(nb, **{name: settings[name] for name in chooses if name in settings})
    return nb.node()


def notebook_text(page: str, settings: Mapping[str, Any], link: str = "", note: str = "") -> str:
    """`build_notebook` as the ``.ipynb`` file's text (nbformat 4 JSON, written without validating it again)."""
    from nbformat import v4

    return v4.writes(build_notebook(page, settings, link, note))
