"""The worked example's notebook, downloaded from the page's export menu at real links, run in a kernel: its
numbers are `core.worked_example`'s, and a token that looks like code stays a token."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core import LESSON_TOKENS, LESSON_X, worked_example
from core.user_input import parse_matrix, validate_input
from tests.helpers.notebooks import assert_close, kernel, notebook_from_page, run_notebook  # noqa: F401

PAGE = "app_pages/worked_example.py"
NAMES = ["tokens", "X", "W_q", "W_k", "W_v", "Q", "K", "V", "raw_scores", "scaled_scores", "weights", "output"]
#: A token that would run code if a notebook wrote it into its source as text rather than as a string.
TRAP = Path("/tmp/attention_notebook_trap")
CODE_TOKEN = f"\"');__import__('pathlib').Path('{TRAP}').touch();('"

LINKS = [
    {},
    {"seed": "3", "reveal": "raw scores"},
    {"seed": "7", "tokens": f"the dog {CODE_TOKEN} man", "X": "1,0,2;0,1,-1.5;0.25,1,1;2,2,0"},
]


@pytest.mark.parametrize("link", LINKS, ids=["defaults", "seed 3", "own input"])
def test_the_notebook_recomputes_the_view(kernel, link):  # noqa: F811
    TRAP.unlink(missing_ok=True)
    name, text = notebook_from_page(PAGE, **link)
    assert name == "worked_example.ipynb"
    found = run_notebook(text, kernel, NAMES)
    seed = int(link.get("seed", 0))
    tokens, X = (validate_input(link["tokens"].split(), parse_matrix(link["X"])) if "tokens" in link
                 else (LESSON_TOKENS, LESSON_X))
    ex = worked_example(seed, X=X, tokens=tokens)
    assert found["tokens"] == list(ex.tokens)
    assert_close(found, {n: getattr(ex, n) for n in NAMES if n != "tokens"})
    assert not TRAP.exists()
    if not link:  # the lesson's printed weights
        np.testing.assert_allclose(found["weights"], [[0.509, 0.196, 0.295], [0.092, 0.422, 0.486],
                                                      [0.233, 0.104, 0.663]], atol=5e-4)
