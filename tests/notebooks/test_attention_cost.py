"""The cost page's notebook, downloaded at real links and run: the predicted memory and the context table are
`cost.measure`'s; the timings are the student's machine's, so only their sizes and slopes are checked."""

from __future__ import annotations

import numpy as np
import pytest

from cost.measure import predicted_bytes
from cost.sizes import MODEL_SHAPES, context_table, weight_matrix_bytes
from tests.helpers.notebooks import assert_close, notebook_from_page, run_notebook

PAGE = "app_pages/attention_cost.py"
LINKS = [{}, {"max_len": "256", "d_k": "16", "arch": "Llama-2-7B (32 layers × 32 heads)"},
         {"max_len": "512", "d_k": "128", "arch": "Llama-3-70B (80 layers × 64 heads)"}]
COLUMNS = ["context", "entries per head", "per head", "per layer", "all layers"]


@pytest.mark.parametrize("link", LINKS, ids=["defaults", "T 256, d_k 16, Llama-2-7B", "T 512, d_k 128, Llama-3-70B"])
def test_the_notebook_recomputes_the_view(kernel, link):
    name, text = notebook_from_page(PAGE, **link)
    assert name == "attention_cost.ipynb"
    found = run_notebook(text, kernel, ["one_matrix_mib", "naive_mib", "sizes", "context_table", "slopes"])
    max_len, d_k = int(link.get("max_len", 2048)), int(link.get("d_k", 64))
    rows = context_table([512, 2048, 8192, 32_768, 131_072], *MODEL_SHAPES[link.get("arch", next(iter(MODEL_SHAPES)))])
    table = np.asarray(found["context_table"], dtype=object)  # columns: context, dtype, entries, per head, …
    assert_close({"one": found["one_matrix_mib"], "naive": found["naive_mib"],
                  "table": table[:, [0, 2, 3, 4, 5]].astype(float)},
                 {"one": weight_matrix_bytes(max_len, 4) / 2**20,
                  "naive": predicted_bytes("naive", max_len, d_k) / 2**20,
                  "table": [[r[c] for c in COLUMNS] for r in rows]})
    assert list(table[:, 1]) == [r["dtype"] for r in rows]
    assert found["sizes"] == [n for n in (64, 128, 256, 512, 1024, 2048, 4096) if n <= max_len]
    assert set(found["slopes"]) == {"core", "naive", "fused"} and all(np.isfinite(list(found["slopes"].values())))
