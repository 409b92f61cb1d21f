"""`ui.layout.static_table`: a small table as one Markdown element, its numbers formatted and right-aligned."""

from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers.apptest import markdown_tables


def _table_app() -> None:
    import numpy as np

    from ui.layout import static_table

    static_table({"key": ["a|b", "*c*"], "w": np.array([0.123456, 1.0]), "n": [1, 2]}, formats={"w": "{:.3f}"})


def test_a_static_table_is_one_markdown_element_with_its_formats():
    at = AppTest.from_function(_table_app, default_timeout=60).run()
    assert not at.exception and len(at.markdown) == 1 and not at.table
    lines = at.markdown[0].value.splitlines()
    assert lines[1] == "| :--- | ---: | ---: |"  # text left, numbers right
    (shown,) = markdown_tables(at)
    assert list(shown.columns) == ["key", "w", "n"]
    assert shown.to_dict("list") == {"key": ["a|b", "*c*"], "w": ["0.123", "1.000"], "n": ["1", "2"]}


def test_columns_of_different_lengths_are_refused():
    from ui.layout import static_table

    with pytest.raises(ValueError, match="different lengths"):
        static_table({"a": [1, 2], "b": np.ones(3)})
