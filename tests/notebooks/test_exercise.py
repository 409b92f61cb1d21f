"""The exercise's notebook, downloaded from the page and run: the empty function fails the first check, the
reference solution passes every check on the checker's own inputs, and a known mistake fails the check that names
it."""

from __future__ import annotations

import inspect
import re

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError

import core.exercise_solution
from core import worked_example
from exercise.cases import exercise_cases
from exercise.verdicts import torch_scaled_dot_product_attention
from tests.helpers.notebooks import assert_close, notebook_from_page, run_notebook

PAGE = "app_pages/exercise.py"
STUB = 'raise NotImplementedError("write your attention here")'
NAMES = ["Q", "K", "V", "Q_worked", "K_worked", "V_worked", "lesson_output", "expected", "output", "worked_output"]


def with_function(text: str, source: str) -> str:
    """The notebook with its empty function's cell replaced by `source`, as a student fills it in."""
    nb = nbformat.reads(text, as_version=4)
    (cell,) = [c for c in nb.cells if c.cell_type == "code" and STUB in c.source]
    cell.source = source
    return nbformat.writes(nb)


@pytest.mark.parametrize("link", [{}, {"present": "true"}], ids=["defaults", "presenter mode"])
def test_the_reference_solution_passes_every_check_on_the_checkers_inputs(kernel, link):
    name, text = notebook_from_page(PAGE, **link)
    assert name == "exercise.ipynb"
    found = run_notebook(with_function(text, inspect.getsource(core.exercise_solution)), kernel, NAMES)
    cases = {c.name: c for c in exercise_cases()}
    rand, worked = cases["random"], cases["worked"]
    assert_close(found, {"Q": rand.Q, "K": rand.K, "V": rand.V, "Q_worked": worked.Q, "K_worked": worked.K,
                         "V_worked": worked.V, "lesson_output": worked_example(0).output,
                         "expected": torch_scaled_dot_product_attention(rand.Q, rand.K, rand.V)})


@pytest.mark.parametrize(("change", "message"), [
    (None, "NotImplementedError: write your attention here"),
    (("dim=-1", "dim=-2"), "The rows do not sum to 1: is the softmax over dim=-1, the keys?"),
    (("/ d_k**0.5", ""), "torch.allclose is False"),
], ids=["empty", "softmax over the queries", "no scaling"])
def test_the_first_failing_check_says_what_is_wrong(kernel, change, message):
    _, text = notebook_from_page(PAGE)
    if change is not None:
        text = with_function(text, inspect.getsource(core.exercise_solution).replace(*change))
    with pytest.raises(CellExecutionError) as failed:
        run_notebook(text, kernel, [])
    assert message in re.sub(r"\x1b\[[0-9;]*m", "", str(failed.value))  # without the traceback's colours
