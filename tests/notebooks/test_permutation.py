"""The permutation page's notebook, downloaded at real links and run: `core.permutation`'s numbers."""

from __future__ import annotations

import numpy as np
import pytest

from core.embeddings import embed_tokens, random_projections
from core.permutation import permutation_check, torch_permutation_difference
from tests.helpers.notebooks import assert_close, notebook_from_page, run_notebook

PAGE = "app_pages/permutation.py"
NAMES = ["X", "PX", "output", "output_perm", "output_unpermuted", "weights", "weights_perm", "weights_expected",
         "output_diff"]
FIELDS = ["x", "x_perm", "output", "output_perm", "output_unpermuted", "weights", "weights_perm", "weights_expected",
          "output_diff"]
LINKS = [{}, {"text": "a b c a", "perm": "3,0,1,2", "seed": "4", "pe": "true"},
         {"text": "the dog bit the man", "perm": "3,4,2,0,1", "seed": "2"}]


@pytest.mark.parametrize("link", LINKS, ids=["defaults", "a b c a with PE", "the dog bit the man"])
def test_the_notebook_recomputes_the_view(kernel, link):
    name, text = notebook_from_page(PAGE, **link)
    assert name == "permutation.ipynb"
    found = run_notebook(text, kernel, [*NAMES, "out", "out_unpermuted"])
    tokens = link.get("text", "the cat sat on the mat").split()
    perm = [int(p) for p in link.get("perm", "5,0,1,2,3,4").split(",")]
    seed, add_pe = int(link.get("seed", 0)), link.get("pe") == "true"
    x, projections = embed_tokens(tokens, 16, seed), random_projections(16, seed)
    check = permutation_check(x, projections, perm, n_heads=4, add_pe=add_pe)
    assert_close(found, {n: getattr(check, f) for n, f in zip(NAMES, FIELDS, strict=True)})
    torch_diff = np.abs(np.asarray(found["out"]) - np.asarray(found["out_unpermuted"])).max()
    np.testing.assert_allclose(torch_diff, torch_permutation_difference(x, projections, perm, 4, add_pe=add_pe),
                               rtol=0, atol=1e-6)
