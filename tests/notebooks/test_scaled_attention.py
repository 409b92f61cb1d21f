"""The √d_k lab's notebook, downloaded from the page at real links and run: `core.scaling`'s numbers."""

from __future__ import annotations

import numpy as np
import pytest

from core.scaling import scaling_example, score_sweep
from tests.helpers.notebooks import assert_close, notebook_from_page, run_notebook

PAGE = "app_pages/scaled_attention.py"
NAMES = ["Q", "K", "V", "scores", "weights", "output", "max_weight", "entropy", "jacobian", "sweep"]
LINKS = [{}, {"d_k": "1024", "scaled": "false"}, {"seed": "5", "seq_len": "3", "d_k": "2"}]


@pytest.mark.parametrize("link", LINKS, ids=["defaults", "unscaled d_k 1024", "seed 5, T 3, d_k 2"])
def test_the_notebook_recomputes_the_view(kernel, link):
    name, text = notebook_from_page(PAGE, **link)
    assert name == "scaled_attention.ipynb"
    found = run_notebook(text, kernel, NAMES + ["reference"])
    seed, seq_len, d_k = int(link.get("seed", 0)), int(link.get("seq_len", 8)), int(link.get("d_k", 64))
    scaled = link.get("scaled", "true") == "true"
    ex = scaling_example(seq_len, d_k, seed, scaled=scaled)
    sweep = score_sweep(seq_len, seed)
    assert_close(found, {"Q": ex.Q, "K": ex.K, "V": ex.V, "scores": ex.scores, "weights": ex.weights,
                         "output": ex.output, "max_weight": ex.stats.max_weight, "entropy": ex.stats.entropy,
                         "jacobian": ex.stats.jacobian_norm})
    # the sweep's table: one row per d_k, columns var_raw, var_scaled, max_weight_raw, max_weight_scaled
    assert_close({"sweep": found["sweep"]}, {"sweep": np.stack([sweep.var_raw, sweep.var_scaled,
                                                                sweep.max_weight_raw, sweep.max_weight_scaled], 1)})
    np.testing.assert_allclose(found["reference"], ex.output, rtol=0, atol=1e-12)  # PyTorch in float64 agrees
