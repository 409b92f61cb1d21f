"""A view's settings reach its notebook as data: literals that read back equal, never code that runs."""

from __future__ import annotations

import ast

import nbformat
import numpy as np
import pytest

from core import LESSON_X
from notebooks import PAGES, build_notebook, settings_of
from notebooks.values import NotWritableError, literal, md_code, safe_link, settings_source, writable
from tests.helpers.fresh_process import fresh_python

CODE_TOKENS = ['"); import os', "'); import os; ('", "\\'); x = 1 #", "a\nimport os", "\u2028import os", "`x`"]


@pytest.mark.parametrize("value", [0, -3, 0.1, 1e-300, True, None, "τ", *CODE_TOKENS,
                                   [["a", 1.5], [2, None]], (1, 2)])
def test_a_literal_reads_back_as_the_same_value(value):
    back = ast.literal_eval(literal(value))
    assert back == (list(value) if isinstance(value, tuple) else value)


def test_arrays_and_numpy_scalars_are_written_as_lists_and_numbers():
    assert ast.literal_eval(literal(np.array([[1.0, 0.5]]))) == [[1.0, 0.5]]
    assert literal(np.int64(3)) == "3" and literal(np.float64(0.25)) == "0.25" and literal(np.bool_(True)) == "True"


@pytest.mark.parametrize("value", [float("nan"), float("inf"), [1.0, float("-inf")], object(), {"a": 1}, b"x"])
def test_a_value_that_is_not_data_is_refused(value):
    with pytest.raises(NotWritableError):
        literal(value)
    assert not writable({"x": value})


def test_the_settings_cell_assigns_strings_and_runs_nothing_else():
    source = settings_source({"tokens": CODE_TOKENS, "seed": 3})
    namespace: dict = {}
    exec(compile(source, "settings", "exec"), {"__builtins__": {}}, namespace)  # no builtins: nothing to import
    assert namespace == {"tokens": CODE_TOKENS, "seed": 3}
    tree = ast.parse(source)
    assert all(isinstance(node, ast.Assign) for node in tree.body)
    with pytest.raises(NotWritableError):
        settings_source({"x; import os": 1})


def test_markdown_code_spans_and_links_keep_their_text_inert():
    assert md_code("a`b") == "`` a`b ``" and md_code("x") == "`x`"
    assert safe_link("http://h/p?tokens=a+b&X=1,0)](javascript:x)<b>") == \
        "http://h/p?tokens=a+b&X=1,0%29%5D%28javascript:x%29%3Cb%3E"


@pytest.mark.parametrize("page", PAGES)
def test_a_state_that_cannot_be_written_is_refused_by_every_page(page):
    with pytest.raises(NotWritableError):
        settings_of(page, {})


def test_a_state_a_page_cannot_write_is_refused():
    with pytest.raises(NotWritableError, match="do not divide"):
        settings_of("multi_head", {"seed": 0, "d_model": 16, "heads": 3, "seq_len": 4})
    with pytest.raises(NotWritableError):
        settings_of("worked_example", {"seed": 0, "tokens": ["a"], "X": [[float("nan")]]})
    with pytest.raises(KeyError):
        settings_of("no_such_page", {})


def test_a_code_token_is_only_in_the_settings_cell_as_a_string():
    settings = settings_of("worked_example", {"seed": 0, "tokens": ['"); import os', "b", "c"], "X": LESSON_X})
    nb = build_notebook("worked_example", settings, link="http://localhost:8501/worked_example?tokens=%22%29%3B+import+os+b+c")
    nbformat.validate(nb)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    assert [i for i, source in enumerate(code) if "import os" in source] == [0]
    assert ast.literal_eval(code[0].splitlines()[2].split(" = ", 1)[1]) == ['"); import os', "b", "c"]


def test_checking_a_state_imports_no_nbformat():
    """A page's every run checks its state: that must not pay for nbformat's import (a tenth of a second)."""
    out = fresh_python("import sys\nfrom notebooks import PAGES, settings_of\n"
                       "settings_of('multi_head', {'seed': 3, 'd_model': 16, 'heads': 4, 'seq_len': 6})\n"
                       "import notebooks.cross_attention, notebooks.worked_example\n"
                       "print(sorted(m for m in sys.modules if m.split('.')[0] in ('nbformat', 'jsonschema',"
                       " 'fastjsonschema')))")
    assert out.strip() == "[]"


def test_a_setting_that_chose_the_cells_is_listed_in_the_header_and_not_set_in_the_first_cell():
    """The worked example's stage revealed chose its cells: setting it in the first cell would change nothing."""
    settings = settings_of("worked_example", {"seed": 0, "tokens": ["a", "b"], "X": [[1.0], [0.0]],
                                              "reveal": "raw scores"})
    nb = build_notebook("worked_example", settings)
    header, code = nb.cells[0].source, [c.source for c in nb.cells if c.cell_type == "code"]
    assert "- `reveal` = `'raw scores'` (it chose this notebook's cells" in header
    assert "reveal" not in code[0] and "seed = 0" in code[0]
    assert not any("scaled_scores" in source for source in code)
