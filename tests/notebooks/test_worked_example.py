"""The worked example's notebook, downloaded from the page's export menu at real links, run in a kernel: its
numbers are `core.worked_example`'s (or the designed weights' example), up to the stage the page revealed and no
further, and a token that looks like code stays a token."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core import LESSON_TOKENS, LESSON_X, worked_example
from core.designed_weights import PRESETS, designed_example
from core.user_input import parse_matrix, validate_input
from core.worked_example import example_from_weights
from notebooks import notebook_text, settings_of
from notebooks.values import NotWritableError
from notebooks.worked_example import WEIGHTS
from tests.helpers.notebooks import assert_close, notebook_from_page, run_notebook

PAGE = "app_pages/worked_example.py"
#: The names each stage adds, in the page's order of stages.
STAGE_NAMES = [["X"], ["W_q", "W_k", "W_v", "Q", "K", "V"], ["raw_scores"], ["scaled_scores"], ["weights"], ["output"]]
STAGES = ["X", "Q, K, V", "raw scores", "scaled scores", "softmax", "output"]
NAMES = [n for names in STAGE_NAMES for n in names]
#: A token that would run code if a notebook wrote it into its source as text rather than as a string.
TRAP = Path("/tmp/attention_notebook_trap")
CODE_TOKEN = f"\"');__import__('pathlib').Path('{TRAP}').touch();('"

LINKS = [
    {},
    {"seed": "3", "reveal": "raw scores"},
    {"seed": "7", "tokens": f"the dog {CODE_TOKEN} man", "X": "1,0,2;0,1,-1.5;0.25,1,1;2,2,0"},
    {"weights": "designed"},
    {"weights": "previous word", "reveal": "softmax"},
]


def revealed(reveal: str) -> list[str]:
    return [n for names in STAGE_NAMES[: STAGES.index(reveal) + 1] for n in names]


@pytest.mark.parametrize("link", LINKS, ids=["defaults", "seed 3, up to the raw scores", "own input",
                                             "designed weights", "previous-word preset, up to the softmax"])
def test_the_notebook_recomputes_the_view_up_to_its_stage(kernel, link):
    TRAP.unlink(missing_ok=True)
    name, text = notebook_from_page(PAGE, **link)
    assert name == "worked_example.ipynb"
    found = run_notebook(text, kernel, ["tokens", *NAMES, "reference"])
    if "weights" in link:
        ex = designed_example(PRESETS[link["weights"]])
    else:
        tokens, X = (validate_input(link["tokens"].split(), parse_matrix(link["X"])) if "tokens" in link
                     else (LESSON_TOKENS, LESSON_X))
        ex = worked_example(int(link.get("seed", 0)), X=X, tokens=tokens)
    reveal = link.get("reveal", "output")
    assert found["tokens"] == list(ex.tokens)
    assert set(found) - {"tokens"} == set(revealed(reveal)) | ({"reference"} if reveal == "output" else set())
    assert_close(found, {n: getattr(ex, n) for n in revealed(reveal)})
    assert not TRAP.exists()
    if not link:  # the lesson's printed weights
        np.testing.assert_allclose(found["weights"], [[0.509, 0.196, 0.295], [0.092, 0.422, 0.486],
                                                      [0.233, 0.104, 0.663]], atol=5e-4)


def test_any_preset_s_matrices_are_written_as_data(kernel):
    """Designed weights reach the notebook as numbers: a preset of other sizes (W_v wider than d_k) runs as it is."""
    rng = np.random.default_rng(5)
    tokens, X = ("a", "b", "c", "d", "e"), rng.normal(size=(5, 3))
    W_q, W_k, W_v = rng.normal(size=(3, 2)), rng.normal(size=(3, 2)), rng.normal(size=(3, 4))
    settings = settings_of("worked_example", {"weights": "designed", "tokens": tokens, "X": X, "W_q": W_q,
                                              "W_k": W_k, "W_v": W_v, "reveal": "output"})
    found = run_notebook(notebook_text("worked_example", settings), kernel, NAMES)
    ex = example_from_weights(tokens, X, W_q, W_k, W_v)
    assert_close(found, {n: getattr(ex, n) for n in NAMES})


def test_the_notebook_knows_every_preset_the_page_offers():
    assert WEIGHTS == ("random", *PRESETS)


@pytest.mark.parametrize("change", [{"reveal": "everything"}, {"weights": "learned"}, {"W_q": [[1.0]]},
                                    {"X": [[1.0, 2.0], [3.0]]}, {"tokens": ["a"]}])
def test_a_view_the_page_cannot_show_is_not_written(change):
    view = {"weights": "designed", "tokens": ["a", "b"], "X": [[1.0, 0.0], [0.0, 1.0]], "W_q": np.eye(2),
            "W_k": np.eye(2), "W_v": np.eye(2), "reveal": "softmax"}
    assert settings_of("worked_example", view)["reveal"] == "softmax"
    with pytest.raises(NotWritableError):
        settings_of("worked_example", {**view, **change})
