"""The positional encoding page's notebook, downloaded at real links and run: `core.positional_analysis`'s
numbers (the lesson's 5 × 8 table at the defaults)."""

from __future__ import annotations

import numpy as np
import pytest

from core.positional_analysis import encoding_table, wavelengths
from tests.helpers.notebooks import assert_close, notebook_from_page, run_notebook

PAGE = "app_pages/positional_encoding.py"
LINKS = [{}, {"positions": "64", "d_model": "7", "dims": ["0", "6"]}, {"positions": "200", "d_model": "128"}]


@pytest.mark.parametrize("link", LINKS, ids=["defaults", "64 positions, odd d_model 7", "200 x 128"])
def test_the_notebook_recomputes_the_view(kernel, link):
    name, text = notebook_from_page(PAGE, **link)
    assert name == "positional_encoding.ipynb"
    found = run_notebook(text, kernel, ["pe", "similarity", "offset_formula", "offset_error", "distinct",
                                        "wavelengths", "dims"])
    positions, d_model = int(link.get("positions", 5)), int(link.get("d_model", 8))
    table = encoding_table(positions, d_model)
    assert_close(found, {"pe": table.pe, "similarity": table.similarity, "offset_formula": table.offset_formula,
                         "offset_error": table.offset_error, "wavelengths": wavelengths(d_model)})
    assert found["distinct"] == table.distinct
    assert found["dims"] == sorted(int(d) for d in link.get("dims", [0, 1, 2, 4]))
    if not link:  # the lesson's printed table, to its 3 decimals
        np.testing.assert_allclose(found["pe"][4], [-0.757, -0.654, 0.389, 0.921, 0.04, 0.999, 0.004, 1.0], atol=5e-4)
