"""The real model's notebook, downloaded at real links and run: every layer's and head's map is
`pretrained.model.run_model`'s, from the weights of the installed package."""

from __future__ import annotations

import pytest

from pretrained.model import run_model
from tests.helpers.notebooks import assert_close, notebook_from_page, run_notebook

PAGE = "app_pages/pretrained.py"
DEFAULT_TEXT = "The cat sat on the mat because it was tired."
LINKS = [{}, {"text": "The dog ran home", "layer": "3", "head": "7"},
         {"text": "Attention is all you need, said the paper's title.", "layer": "6", "head": "12"}]


@pytest.mark.parametrize("link", LINKS, ids=["defaults", "the dog ran home, 3.7", "a title, 6.12"])
def test_the_notebook_recomputes_the_view(kernel, link):
    name, text = notebook_from_page(PAGE, **link)
    assert name == "pretrained.ipynb"
    found = run_notebook(text, kernel, ["tokens", "attention", "chosen"])
    run = run_model(link.get("text", DEFAULT_TEXT))
    layer, head = int(link.get("layer", 1)), int(link.get("head", 1))
    assert found["tokens"] == list(run.tokens)
    assert_close(found, {"attention": run.weights, "chosen": run.weights[layer - 1, head - 1]})
