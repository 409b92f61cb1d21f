"""Take it home: a page's view as a Jupyter notebook that recomputes its numbers with NumPy and PyTorch.

No Streamlit, and none of this app's packages in the notebooks' code: each runs anywhere with
``pip install numpy torch pandas altair``. One module per page, each with its ``TITLE``, its ``settings(state)``
(the view's state as the values the first code cell sets) and its ``cells(nb)`` (everything after the header)::

    text = notebook_text("multi_head", {"seed": 3, "heads": 4, ...}, link="https://…/multi_head?seed=3&heads=4")
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import nbformat

from notebooks.builder import Notebook, header
from notebooks.values import NotWritable

#: The pages that have a notebook, by their page name (``app_pages/<name>.py``), and the module that writes it.
PAGES = ("worked_example", "soft_lookup", "scaled_attention", "multi_head", "permutation")


def build_notebook(page: str, state: Mapping[str, Any], link: str = "", note: str = "") -> nbformat.NotebookNode:
    """The notebook of `page` at `state`: its header (the page, the settings, `link`, `note`), then its cells.

    Raises `NotWritable` for a state whose values cannot be written as data, `KeyError` for a page without one.
    """
    if page not in PAGES:
        raise KeyError(f"the page {page!r} has no notebook.")
    module = importlib.import_module(f"notebooks.{page}")
    try:
        settings = module.settings(state)
    except (KeyError, TypeError, ValueError) as err:
        raise NotWritable(f"the view's state cannot be written as data: {err}") from err
    nb = Notebook()
    header(nb, module.TITLE, page, settings, link, note)
    module.cells(nb)
    return nb.node()


def notebook_text(page: str, state: Mapping[str, Any], link: str = "", note: str = "") -> str:
    """`build_notebook` as the ``.ipynb`` file's text (nbformat 4 JSON)."""
    return nbformat.writes(build_notebook(page, state, link, note))
