"""The cross-attention page's notebook, downloaded at real links and run: `core.encoder_decoder`'s numbers."""

from __future__ import annotations

import pytest

from core.encoder_decoder import encoder_decoder_attention
from tests.helpers.notebooks import assert_close, notebook_from_page, run_notebook

PAGE = "app_pages/cross_attention.py"
LINKS = [{}, {"src": "I love you", "tgt": "je t'aime bien fort", "seed": "3", "d_model": "4"},
         {"src": "a b a b a b a b a b a b", "tgt": "x", "d_model": "64"}]


@pytest.mark.parametrize("link", LINKS, ids=["defaults", "3 to 4 words, d_model 4", "12 to 1 word, d_model 64"])
def test_the_notebook_recomputes_the_view(kernel, link):
    name, text = notebook_from_page(PAGE, **link)
    assert name == "cross_attention.ipynb"
    found = run_notebook(text, kernel, ["X_src", "X_tgt", "encoder_weights", "memory", "decoder_weights",
                                        "decoder_hidden", "cross_weights", "output"])
    r = encoder_decoder_attention(link.get("src", "the cat sat on the mat").split(),
                                  link.get("tgt", "le chat s'est assis").split(),
                                  d_model=int(link.get("d_model", 16)), seed=int(link.get("seed", 0)))
    assert_close(found, {"X_src": r.X_src, "X_tgt": r.X_tgt, "encoder_weights": r.encoder.weights,
                         "memory": r.memory, "decoder_weights": r.decoder.weights,
                         "decoder_hidden": r.decoder_hidden, "cross_weights": r.cross.weights, "output": r.output})
