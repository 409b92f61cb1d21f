"""The soft lookup's notebook, downloaded from the page at real links and run: `core.lookup`'s numbers."""

from __future__ import annotations

import numpy as np
import pytest

from core.lookup import compare_lookups, fruit_dictionary
from tests.helpers.notebooks import assert_close, notebook_from_page, run_notebook

PAGE = "app_pages/soft_lookup.py"
NAMES = ["scores", "hard_weights", "hard_result", "soft_weights", "soft_result", "weighted_values",
         "sweep_temperatures", "sweep_results", "sweep_weights"]
SWEEP = np.geomspace(0.01, 10.0, 121)  # app_pages/soft_lookup.py's SWEEP_TEMPERATURES
LINKS = [{}, {"query": "very sweet", "temp": "0.01"}, {"query": "sweet and sour", "temp": "5.0"}]


@pytest.mark.parametrize("link", LINKS, ids=["defaults", "very sweet, cold", "sweet and sour, hot"])
def test_the_notebook_recomputes_the_view(kernel, link):
    name, text = notebook_from_page(PAGE, **link)
    assert name == "soft_lookup.ipynb"
    found = run_notebook(text, kernel, NAMES)
    shop = fruit_dictionary()
    lookup = compare_lookups(shop.queries[link.get("query", "sweet")], shop.keys, shop.values,
                             float(link.get("temp", 0.2)), SWEEP)
    assert_close(found, {n: getattr(lookup, n) for n in NAMES})
