"""The multi-head page's notebook, downloaded at real links and run: `core.multihead_steps`' numbers, and
torch.nn.MultiheadAttention agreeing with them (the issue's "done": seed 3 with 4 heads)."""

from __future__ import annotations

import numpy as np
import pytest

from core.embeddings import embed_tokens, random_projections
from core.multihead_steps import multi_head_steps
from tests.helpers.notebooks import assert_close, notebook_from_page, run_notebook

PAGE = "app_pages/multi_head.py"
SENTENCE = "the cat sat on the mat because it was tired and the dog ran off home".split()
STEPS = ["q", "k", "v", "q_heads", "scores", "weights", "head_outputs", "concat", "output"]
NAMES = ["Q", "K", "V", "Q_heads", "scores", "weights", "head_outputs", "concat", "output"]
LINKS = [{}, {"seed": "3", "heads": "4"}, {"seed": "9", "d_model": "6", "heads": "3", "seq_len": "16"}]


@pytest.mark.parametrize("link", LINKS, ids=["defaults", "seed 3, 4 heads", "d_model 6, 3 heads, 16 tokens"])
def test_the_notebook_recomputes_the_view(kernel, link):
    name, text = notebook_from_page(PAGE, **link)
    assert name == "multi_head.ipynb"
    found = run_notebook(text, kernel, [*NAMES, "torch_output", "torch_weights"])
    seed, d_model = int(link.get("seed", 0)), int(link.get("d_model", 16))
    n_heads, seq_len = int(link.get("heads", 4)), int(link.get("seq_len", 6))
    X = embed_tokens(SENTENCE[:seq_len], d_model, seed)
    steps = multi_head_steps(X, *random_projections(d_model, seed), n_heads)
    assert_close(found, {n: getattr(steps, s) for n, s in zip(NAMES, STEPS, strict=True)})
    assert_close({"o": found["torch_output"][0], "w": found["torch_weights"][0]},
                 {"o": steps.output, "w": steps.weights}, atol=1e-12)
    assert np.asarray(found["weights"]).shape == (n_heads, seq_len, seq_len)
