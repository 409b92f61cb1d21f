"""The export menu as a lecturer uses it: open the popover, pick a matrix, download the file, check its numbers."""

from __future__ import annotations

import json
import re

import numpy as np

from core.embeddings import embed_tokens, random_projections
from core.permutation import permutation_check
from devtools.browser import settle
from tests.browser.test_data_editor import fill_cell, open_editor
from tests.helpers.browser_pages import open_watched, run_and_settle, server_stalled
from tests.helpers.exports import parse_csv, parse_latex


def open_menu(page, button) -> None:
    """Click an export menu's `button` and wait for the run that draws its select box (a closed menu holds none)."""
    run_and_settle(page, button.click)


def pick_and_download(page, option: str) -> tuple[str, str]:
    """In the open export popover, choose `option`, wait for the run the choice asks for, download: ``(file name,
    text)``. ``page.traffic`` must count the page's websocket from its load (`open_watched`).

    Until the server has begun that run the page is still and its button still offers the file chosen before, so
    the wait is for the run's end on the websocket (`run_and_settle`), not for a still page. An option already
    chosen asks for no run."""
    body = page.locator('[data-testid="stPopoverBody"]')
    box = body.locator('[data-testid="stSelectbox"]')
    if box.locator("input").input_value() != option:
        def choose() -> None:
            box.click()
            page.keyboard.type(option)
            page.keyboard.press("Enter")
        run_and_settle(page, choose)
    assert box.locator("input").input_value() == option
    button = body.locator('[data-testid="stDownloadButton"] button')  # the popover stayed open through the rerun
    with page.expect_download() as info:
        button.click()
    download = info.value
    return download.suggested_filename, open(download.path(), encoding="utf-8").read()


def test_a_permutation_panel_downloads_as_csv_and_latex(page, app_url, app_server):
    """Two files picked one after the other, each while the server is held back for a second (as on a loaded
    machine): each download is the file picked."""
    open_watched(page, app_url, "permutation", "text=a+b+c+a&perm=3,0,1,2&seed=4")
    open_menu(page, page.locator('[data-testid="stPopover"] button').first)
    menu = page.locator('[data-testid="stPopoverBody"] [data-testid="stSelectbox"]').bounding_box()
    assert menu["width"] >= 600  # wide enough for a chart's titles with the file format after them
    check = permutation_check(embed_tokens(["a", "b", "c", "a"], 16, 4), random_projections(16, 4), [3, 0, 1, 2], 4)
    with server_stalled(app_server, 1.0):
        name, text = pick_and_download(page, "PX · CSV")
    matrix, rows, cols = parse_csv(text)
    assert name == "px.csv" and rows == ["a (3)", "a (0)", "b", "c"] and cols == [str(j) for j in range(16)]
    np.testing.assert_allclose(matrix, check.x_perm, rtol=0, atol=1e-15)
    with server_stalled(app_server, 1.0):
        name, text = pick_and_download(page, "X · LaTeX bmatrix")
    assert name == "x.tex"
    np.testing.assert_allclose(parse_latex(text), check.x, rtol=0, atol=5e-4 + 1e-12)


def test_the_view_downloads_as_a_notebook_that_sets_its_controls(page, app_url):
    """The multi-head page at seed 3 with 8 tokens downloads as a notebook whose first code cell sets that view,
    with the link that reopens it (the notebook's numbers: tests/notebooks)."""
    open_watched(page, app_url, "multi_head", "seed=3&seq_len=8")
    open_menu(page, page.locator('[data-testid="stPopover"] button').first)
    name, text = pick_and_download(page, "Notebook (.ipynb)")
    assert name == "multi_head.ipynb"
    notebook = json.loads(text)
    assert notebook["nbformat"] == 4
    cells = ["".join(c["source"]) for c in notebook["cells"]]
    first_code = next(s for c, s in zip(notebook["cells"], cells, strict=True) if c["cell_type"] == "code")
    assert "seed = 3" in first_code and "seq_len = 8" in first_code and "n_heads = 4" in first_code
    link = re.search(r"\[Reopen this view in the app\]\((\S+)\)", cells[0]).group(1)
    assert link.startswith(f"{app_url}/multi_head?") and "seed=3" in link and "seq_len=8" in link


def test_after_a_refused_edit_the_notebook_holds_the_last_valid_input_and_says_why(page, app_url):
    """A letter typed into the worked example's table: the page keeps the last valid input, and so does the
    notebook, with a note naming the refused cell."""
    grid = open_editor(page, app_url)
    fill_cell(page, grid, 0, 1, "5")  # a valid edit: the last valid input is the student's
    fill_cell(page, grid, 1, 2, "abc")  # refused
    open_menu(page, page.get_by_role("button", name="Export charts and matrices"))
    name, text = pick_and_download(page, "Notebook (.ipynb)")
    cells = ["".join(c["source"]) for c in json.loads(text)["cells"]]
    assert name == "worked_example.ipynb"
    assert "could not be used (`X row 2 ('cat'), column 2 is 'abc', not a number.`)" in cells[1]
    settings = next(c for c in cells if c.startswith("# The view's settings"))
    X = [[5.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], [1.0, 1.0, 0.0, 0.0]]
    assert f"X = {X!r}" in settings and "tokens = ['the', 'cat', 'sat']" in settings


def test_the_decoder_s_notebook_follows_the_words_written_in_its_fragment(page, app_url):
    """Trained, the decoder offers its notebook in the writing section's menu: a Next word click reruns that
    fragment alone, and the notebook then writes one more word (its numbers: tests/notebooks/test_decoder.py)."""
    open_watched(page, app_url, "decoder", "steps=100&prompt=the+dogs&temp=0.5")
    if page.get_by_role("button", name="Train", exact=True).count():
        page.get_by_role("button", name="Train", exact=True).click()
        page.get_by_role("button", name="Trained").wait_for(timeout=300_000)
        settle(page)

    def notebook_settings() -> str:
        open_menu(page, page.get_by_role("button", name="Export charts and matrices"))
        name, text = pick_and_download(page, "Notebook (.ipynb)")
        run_and_settle(page, lambda: page.keyboard.press("Escape"))  # closing the menu reruns the app too
        assert name == "decoder.ipynb"
        return next(s for s in ("".join(c["source"]) for c in json.loads(text)["cells"])
                    if s.startswith("# The view's settings"))

    first = notebook_settings()
    assert "prompt = ['the', 'dogs']" in first and "temperature = 0.5" in first and "n_words = 0" in first
    run_and_settle(page, page.get_by_role("button", name="Next word", exact=True).click)
    assert "n_words = 1" in notebook_settings()
