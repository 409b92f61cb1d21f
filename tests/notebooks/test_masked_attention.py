"""The masked attention page's notebook, downloaded at real links and run: `core.masking`'s numbers."""

from __future__ import annotations

import numpy as np
import pytest

from core.masking import prefix_attention, renormalise_visible, sentence_self_attention
from tests.helpers.notebooks import assert_close, notebook_from_page, run_notebook

PAGE = "app_pages/masked_attention.py"
SENTENCE = "the cat sat on the mat and then it fell fast asleep".split()
NAMES = ["Q", "K", "V", "scores", "weights", "output", "prefix_weights", "prefix_output", "renormalised", "mask"]
LINKS = [{}, {"seed": "2", "seq_len": "12", "causal": "false", "step": "9"}, {"seq_len": "3", "step": "2"}]


@pytest.mark.parametrize("link", LINKS, ids=["defaults", "12 tokens, no mask, step 9", "3 tokens, step 2"])
def test_the_notebook_recomputes_the_view(kernel, link):
    name, text = notebook_from_page(PAGE, **link)
    assert name == "masked_attention.ipynb"
    found = run_notebook(text, kernel, [*NAMES, "reference"])
    seed, seq_len = int(link.get("seed", 0)), int(link.get("seq_len", 6))
    causal, step = link.get("causal", "true") == "true", int(link.get("step", 4))
    shown = sentence_self_attention(SENTENCE[:seq_len], 8, seed, causal=causal)
    masked = sentence_self_attention(SENTENCE[:seq_len], 8, seed, causal=True)
    unmasked = sentence_self_attention(SENTENCE[:seq_len], 8, seed, causal=False)
    prefix_w, prefix_out = prefix_attention(masked.Q, masked.K, masked.V, step)
    assert_close(found, {"Q": shown.Q, "K": shown.K, "V": shown.V, "scores": shown.scores, "weights": shown.weights,
                         "output": shown.output, "prefix_weights": prefix_w, "prefix_output": prefix_out,
                         "renormalised": renormalise_visible(unmasked.weights[step - 1], step)})
    assert found["mask"] == shown.mask.tolist()
    if causal:  # exact zeros above the diagonal
        assert np.all(np.triu(np.asarray(found["weights"]), k=1) == 0.0)
    np.testing.assert_allclose(found["reference"], shown.output, rtol=0, atol=1e-5)  # float32
