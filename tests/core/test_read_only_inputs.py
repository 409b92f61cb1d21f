"""The PyTorch cross-checks take read-only arrays (the app's shared caches hand out nothing else) as they are."""

from __future__ import annotations

from tests.helpers.fresh_process import fresh_python


def test_the_torch_cross_checks_copy_read_only_inputs_without_a_warning():
    """``torch.from_numpy`` on a read-only array warns (once per process, hence a fresh one) that writing to the
    tensor would be undefined; the cross-checks copy their inputs instead."""
    out = fresh_python(
        "import warnings\n"
        "import numpy as np\n"
        "from core import reference\n"
        "from core.embeddings import random_projections\n"
        "from core.multihead_steps import torch_multihead_attention\n"
        "from core.permutation import torch_permutation_difference\n"
        "def frozen(a, dtype=np.float64):\n"
        "    a = np.array(a, dtype=dtype); a.flags.writeable = False; return a\n"
        "x = frozen(np.random.default_rng(0).normal(size=(4, 8)))\n"
        "w = [frozen(m) for m in random_projections(8, 0, n=4)]\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    reference.torch_scaled_dot_product_attention(x, x, x, dtype=np.float64)\n"
        "    reference.torch_scaled_dot_product_attention(x, x, x, is_causal=True)\n"
        "    reference.torch_difference(x, x, x, x, mask=frozen(np.tril(np.ones((4, 4))), bool))\n"
        "    torch_multihead_attention(x, *w, n_heads=2)\n"
        "    torch_permutation_difference(x, w[:4], frozen([1, 0, 3, 2], int), n_heads=2)\n"
        "print(len(caught), [str(c.message)[:80] for c in caught])\n"
    )
    assert out.split(" ", 1)[0] == "0", out
