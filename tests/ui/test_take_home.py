"""The notebook in the export menu (`ui.take_home`): offered first, built only when downloaded, and for a state that
cannot be written as data, the last one that could, with a note."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from tests.helpers.exports import download, export_menu_keys, open_export_menus, recorded_downloads


def _app() -> None:
    """A page's body in its export menu: one chart, and its view offered as the worked example's notebook."""
    import numpy as np
    import streamlit as st

    from ui.charts.heatmap import heatmap
    from ui.display import one_export_menu, show_chart
    from ui.take_home import offer_notebook

    with one_export_menu("export_body"):
        X = np.array([[1.0, 0.0], [0.0, float(st.session_state.get("entry", 1.0))]])
        offer_notebook("worked_example", rejected=st.session_state.get("rejected", ""),
                       seed=int(st.session_state.get("seed", 0)), tokens=["a", "b"], X=X)
        show_chart(heatmap(np.eye(2), title="X"))


def test_the_notebook_is_offered_first_and_built_only_when_downloaded(monkeypatch):
    import ui.take_home

    built = []
    real = ui.take_home.notebook_file
    monkeypatch.setattr(ui.take_home, "notebook_file", lambda *a: built.append(a) or real(*a))
    with recorded_downloads() as files:
        at = AppTest.from_function(_app, default_timeout=60).run()
        assert not at.exception and export_menu_keys(at) == ["export_body_open"] and not at.selectbox
        open_export_menus(at)
        (menu,) = at.selectbox
        assert menu.options[0] == "Notebook (.ipynb)" and menu.options[1] == "Chart · PNG image"
        assert at.download_button[0].label == "worked_example.ipynb" and built == []  # picked, not made
        name, text = download(at, files, "Notebook (.ipynb)")
    assert name == "worked_example.ipynb" and len(built) == 1
    settings = "".join(next(c for c in json.loads(text)["cells"] if c["cell_type"] == "code")["source"])
    assert "seed = 0" in settings and "X = [[1.0, 0.0], [0.0, 1.0]]" in settings


def test_a_state_that_cannot_be_written_exports_the_last_that_could_with_a_note():
    with recorded_downloads() as files:
        at = AppTest.from_function(_app, default_timeout=60)
        at.session_state["seed"] = 5
        at.run()
        at.session_state["seed"], at.session_state["entry"] = 6, float("nan")
        at.run()
        assert not at.exception
        _, text = download(at, files, "Notebook (.ipynb)")
    cells = json.loads(text)["cells"]
    assert cells[1]["cell_type"] == "markdown" and "cannot be written as data" in "".join(cells[1]["source"])
    settings = "".join(next(c for c in cells if c["cell_type"] == "code")["source"])
    assert "seed = 5" in settings and "nan" not in settings.lower()


def test_without_a_state_that_could_be_written_no_notebook_is_offered():
    at = AppTest.from_function(_app, default_timeout=60)
    at.session_state["entry"] = float("inf")
    at.run()
    open_export_menus(at)
    assert "Notebook (.ipynb)" not in at.selectbox[0].options


def test_a_refused_edit_is_named_in_the_notebook_as_text():
    """The page showed its last valid input after refusing an edit: the notebook says why, in a code span."""
    with recorded_downloads() as files:
        at = AppTest.from_function(_app, default_timeout=60)
        at.session_state["rejected"] = "X row 1 ('a'), column 2 is '`<b>x</b>`', not a number."
        at.run()
        _, text = download(at, files, "Notebook (.ipynb)")
    note = "".join(json.loads(text)["cells"][1]["source"])
    assert note.startswith("> **Note:** The view's own input had an edit that could not be used (")
    assert "`` X row 1 ('a'), column 2 is '`<b>x</b>`', not a number. ``" in note
