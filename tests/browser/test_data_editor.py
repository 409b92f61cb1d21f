"""Editing the worked example's own input (`st.data_editor`) in a real browser: bad edits, good edits, the link.

AppTest cannot type into a data editor, so these tests drive headless Chromium. Streamlit's editor is Glide
Data Grid, drawn on a canvas: a cell is selected by clicking the first token cell (at a fixed offset from the
grid's top-left corner) and moving with the arrow keys; Enter opens the cell's editor, whose ``<input>``
Playwright fills, and Enter commits the edit, which reruns the script. The page asks for that rerun a moment
after the key, and the grid may show the edit before then, so a test waits for the rerun on the websocket
(`edit_and_rerun`), never for the page's text to change.

What reaches Python and what the grid handles itself:

* the embedding cells are text columns (`app_pages.worked_example.own_input`), so letters, ``nan``, ``inf``
  and ``1e400`` reach `core.user_input.validate_input`, which names the cell and the problem (a number column
  would turn typed letters into 0 without a word: `test_letters_typed_into_a_number_cell_are_named`);
* the token column is required: the grid refuses to clear a label with the Delete key
  (`test_the_delete_key_cannot_empty_a_token`), and a new row reaches Python only once its token is typed;
  a label typed over with nothing does reach Python, which names it.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlencode, urlparse

import numpy as np
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from core import LESSON_TOKENS, LESSON_X, worked_example
from core.user_input import format_matrix
from devtools.browser import settle
from tests.helpers.interactions import Traffic, wait_for_answer

EXPANDER = '[data-testid="stExpander"]'
HEADER_PX = ROW_PX = 35  # Glide's header and row heights in Streamlit's data editor
#: Inside the first token cell: the row-marker column is about 30 px wide, the token column far wider.
FIRST_CELL = {"x": 60, "y": HEADER_PX + ROW_PX / 2}
#: The text of the output heatmap ("output = A V"): its cell values first, row by row, then legend and title.
OUTPUT_TEXT_JS = """() => {
  for (const e of document.querySelectorAll('.vega-embed')) {
    const texts = Array.from(e.querySelectorAll('svg text')).map(t => t.textContent);
    if (texts.includes('output = A V')) return texts;
  }
  return null;
}"""
#: Resolves after the browser has drawn two more frames: React has applied the keystrokes to the cell editor's
#: state. An Enter pressed before that closes the editor without committing what was typed.
NEXT_FRAMES_JS = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"
#: What the grid shows, read from the table Glide keeps in the DOM for screen readers.
CELLS_JS = """(root) => Array.from(root.querySelectorAll('table [role=gridcell]')).map(c => c.textContent)"""
#: Whether the cell's editor has the keyboard and holds `text`. Enter commits what the editor holds only when it
#: has the keyboard; an Enter that reaches the grid instead, or commits the cell's own content, changes nothing,
#: and the data editor then asks for no rerun (it sends its edits only when they differ from what it last sent).
EDITOR_HOLDS_JS = """(text) => {
  const e = document.activeElement;
  return !!e && !!e.closest('[data-testid="portal"] .gdg-clip-region') && e.value === text;
}"""


def open_editor(page, app_url: str | None, query: dict[str, str] | None = None):
    """Open the worked example (unless `app_url` is None: the page is open) and its own-input expander.

    Return the grid. The expander sends its table only while open, so opening it reruns the page. The page's
    websocket traffic is counted from its load on (``page.traffic``, for `edit_and_rerun`).
    """
    if app_url is not None:
        page.traffic = Traffic(page)
        page.goto(f"{app_url}/" + (f"?{urlencode(query)}" if query else ""))
        settle(page)
    expander = page.locator(EXPANDER).filter(has_text="Use your own tokens and embeddings")
    grid = expander.locator('[data-testid="stDataFrame"]')
    if not grid.is_visible():
        expander.locator("summary").click()
    grid.locator("canvas").first.wait_for(state="visible")
    settle(page)
    grid.locator("table [role=gridcell]").first.wait_for(state="attached")
    return grid


def cell_editor(page):
    """The editor Glide opens over a cell (in a portal outside the grid)."""
    return page.get_by_test_id("portal").locator(".gdg-clip-region").locator("input, textarea").first


def select_cell(page, grid, row: int, col: int) -> None:
    """Select data cell (row, col); col 0 is the token, col j + 1 the embedding dimension d_j.

    Escape first clears any selection: a click on the cell already selected would open its editor.
    """
    page.keyboard.press("Escape")
    page.evaluate(NEXT_FRAMES_JS)
    grid.click(position=FIRST_CELL)
    for _ in range(col):
        page.keyboard.press("ArrowRight")
    for _ in range(row):
        page.keyboard.press("ArrowDown")


def edit_and_rerun(page, key: str) -> None:
    """Press `key`, which ends an edit, and wait until the rerun the edit asks for has run, then `settle`.

    The grid's own text (its table for screen readers) may show the edit before the page has asked for the rerun:
    a wait for the page's text to change could end there, with every number still the old input's."""
    before = page.traffic.counts()
    page.keyboard.press(key)
    assert wait_for_answer(page, page.traffic, before, ask_ms=10_000) == "rerun", f"{key} reran nothing"


def commit(page, text: str) -> None:
    """Press Enter, once the cell's editor has the keyboard and holds `text` and React has taken it, to commit it
    (`edit_and_rerun`). The editor is given the keyboard first, as a student clicks into it again."""
    cell_editor(page).focus()
    page.wait_for_function(EDITOR_HOLDS_JS, arg=text, timeout=10_000)
    page.evaluate(NEXT_FRAMES_JS)
    edit_and_rerun(page, "Enter")


def open_cell_editor(page, grid, row: int, col: int, tries: int = 3) -> None:
    """Select a cell and press Enter, which opens its editor, and wait for the editor. On a loaded machine the
    editor has once stayed closed (the cause not found), so it is asked for `tries` times; the last failure is the
    test's."""
    for attempt in range(tries):
        select_cell(page, grid, row, col)
        page.keyboard.press("Enter")
        try:
            cell_editor(page).wait_for(state="visible", timeout=10_000)
            return
        except PlaywrightTimeoutError:
            if attempt == tries - 1:
                raise


def fill_cell(page, grid, row: int, col: int, text: str) -> None:
    """Replace a cell's content with `text` through its editor, as a paste or select-all-and-type would."""
    open_cell_editor(page, grid, row, col)
    cell_editor(page).fill(text)
    commit(page, text)


def clear_cell(page, grid, row: int, col: int) -> None:
    """Empty a cell as a student does: select it and press Delete."""
    select_cell(page, grid, row, col)
    edit_and_rerun(page, "Delete")


def output_texts(page) -> list[str]:
    texts = page.evaluate(OUTPUT_TEXT_JS)
    assert texts, "no output heatmap on the page"
    return texts


def expected_output(tokens: tuple[str, ...], X: np.ndarray, seed: int = 0) -> list[str]:
    """The output matrix `core` computes for this input, as the heatmap prints it (3 decimals, U+2212 minus)."""
    out = worked_example(seed, X=X.copy(), tokens=tokens).output
    return [f"{v:.3f}".replace("-", "−") for v in out.ravel()]


def query(page) -> dict[str, list[str]]:
    return parse_qs(urlparse(page.url).query)


def errors(page) -> list[str]:
    return page.locator('[data-testid="stAlertContentError"]').all_inner_texts()


def exceptions(page) -> int:
    return page.locator('[data-testid="stException"]').count()


def cells(page, grid) -> list[str]:
    return grid.evaluate(CELLS_JS)


FIRST_EDIT_X = LESSON_X.copy()
FIRST_EDIT_X[0, 0] = 5.0  # "the", d0


#: Bad edits, each with the message it must produce: (row, column, text typed, message). Text None: the cell is
#: emptied with the Delete key.
BAD_EDITS = {
    "text": (1, 2, "abc", "X row 2 ('cat'), column 2 is 'abc', not a number."),
    "nan": (1, 2, "nan", "X row 2 ('cat'), column 2 is empty or NaN"),
    "inf": (1, 2, "inf", "X row 2 ('cat'), column 2 is infinite"),
    "overflow": (1, 2, "1e400", "X row 2 ('cat'), column 2 is infinite"),  # overflows float64
    "empty-cell": (1, 2, None, "X row 2 ('cat'), column 2 is empty"),
    "two-words-token": (0, 0, "two words", "Token 1 ('two words') contains a space"),
    "empty-token": (0, 0, "", "Token 1 has no label"),  # typed over with nothing (the Delete key is refused, below)
}


def test_a_bad_edit_says_what_is_wrong_and_keeps_the_last_valid_input(page, app_url, screenshot_dir):
    """Every bad edit in turn, on one page: the error names the cell, the numbers and the link stay those of the
    last valid input, and the grid keeps what was typed. Typing the cell back clears the error."""
    grid = open_editor(page, app_url)
    fill_cell(page, grid, 0, 1, "5")  # a valid edit first: the last valid input is the student's, not the lesson's
    assert not errors(page)
    valid_output, valid_query = output_texts(page), query(page)
    assert valid_output[:12] == expected_output(LESSON_TOKENS, FIRST_EDIT_X)
    assert valid_query["X"] == [format_matrix(FIRST_EDIT_X)]

    for name, (row, col, text, message) in BAD_EDITS.items():
        was = cells(page, grid)[row * 5 + col]
        if text is None:
            clear_cell(page, grid, row, col)
        else:
            fill_cell(page, grid, row, col, text)
        assert exceptions(page) == 0, name
        (error,) = errors(page)
        assert message in error and "Showing the last valid input until this is fixed." in error, name
        assert output_texts(page) == valid_output, name  # every number below is still the last valid input's
        assert query(page) == valid_query, name  # and so is the link
        assert cells(page, grid)[row * 5 + col] == (text or ""), name  # the grid keeps what was typed
        if screenshot_dir:
            page.screenshot(path=str(screenshot_dir / f"worked_example-bad-edit-{name}.png"), full_page=False)
        fill_cell(page, grid, row, col, was)  # corrected: the error goes, and the numbers are the same
        assert not errors(page) and output_texts(page) == valid_output and query(page) == valid_query, name


def test_letters_typed_into_a_number_cell_are_named(page, app_url):
    """Typed key by key, as a student does: a number column would have committed 0 here, silently."""
    grid = open_editor(page, app_url)
    select_cell(page, grid, 1, 2)
    page.keyboard.press("a")  # the first key opens the cell's editor, holding that key
    editor = cell_editor(page)
    editor.wait_for(state="visible")
    page.keyboard.type("bc")
    assert editor.input_value() == "abc"
    commit(page, "abc")
    assert exceptions(page) == 0
    (error,) = errors(page)
    assert "column 2 is 'abc', not a number" in error
    assert output_texts(page)[:12] == expected_output(LESSON_TOKENS, LESSON_X)
    assert "X" not in query(page)


def test_the_delete_key_cannot_empty_a_token(page, app_url):
    """The token column is required: the grid refuses Delete on a label, so nothing reaches Python.

    Checked through the next edit: had the label been cleared, that edit's rerun would report it.
    """
    grid = open_editor(page, app_url)
    select_cell(page, grid, 0, 0)
    page.keyboard.press("Delete")
    fill_cell(page, grid, 0, 1, "5")
    assert cells(page, grid)[:2] == ["the", "5"]
    assert not errors(page) and exceptions(page) == 0
    assert output_texts(page)[:12] == expected_output(LESSON_TOKENS, FIRST_EDIT_X)
    assert query(page)["tokens"] == ["the cat sat"]


def test_a_ninth_row_is_one_token_too_many(page, app_url, screenshot_dir):
    eight = {"tokens": "a b c d e f g h", "X": ";".join(f"{i},1" for i in range(8))}
    grid = open_editor(page, app_url, eight)
    X = np.array([[i, 1.0] for i in range(8)])
    before = output_texts(page)
    assert before[:16] == expected_output(tuple("abcdefgh"), X)
    grid.hover()  # shows the grid's toolbar
    page.get_by_role("button", name="Add row").click()
    fill_cell(page, grid, 8, 0, "i")  # a new row reaches Python once its required token is typed
    assert exceptions(page) == 0
    (error,) = errors(page)
    assert "9 tokens is more than 8; remove some rows." in error
    assert output_texts(page) == before
    assert query(page)["tokens"] == [eight["tokens"]] and query(page)["X"] == [eight["X"]]
    if screenshot_dir:
        page.screenshot(path=str(screenshot_dir / "worked_example-bad-edit-ninth-row.png"), full_page=False)


def test_good_edits_change_the_output_and_reach_the_link(page, browser, app_url):
    """Every edit counts, including the one typed right after another (the page once dropped every second edit:
    it rebuilt the table from the link it had just rewritten, which gave the editor a new identity)."""
    grid = open_editor(page, app_url)
    tokens, X = list(LESSON_TOKENS), LESSON_X.copy()
    for row, col, text in [(0, 1, "5"), (1, 2, "0.5"), (2, 3, "-2"), (2, 0, "dog")]:
        fill_cell(page, grid, row, col, text)
        if col == 0:
            tokens[row] = text
        else:
            X[row, col - 1] = float(text)
        assert not errors(page) and exceptions(page) == 0
        assert output_texts(page)[:12] == expected_output(tuple(tokens), X)
        assert query(page)["tokens"] == [" ".join(tokens)] and query(page)["X"] == [format_matrix(X)]

    # delete the row of "cat": select it by its row marker, then Delete
    grid.click(position={"x": 15, "y": HEADER_PX + ROW_PX * 1.5})
    edit_and_rerun(page, "Delete")
    tokens, X = [tokens[0], tokens[2]], X[[0, 2]]
    assert output_texts(page)[:8] == expected_output(tuple(tokens), X)
    assert query(page)["tokens"] == ["the dog"] and query(page)["X"] == [format_matrix(X)]

    # the link opens the same input in a new browser session
    other = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
    try:
        grid = open_editor(other, app_url, {k: v[0] for k, v in query(page).items()})
        assert cells(other, grid) == ["the", "5", "0", "1", "0", "dog", "1", "1", "-2", "0"]
        assert output_texts(other)[:8] == expected_output(tuple(tokens), X)
    finally:
        other.context.close()


def test_closing_the_table_keeps_the_edit_and_reopening_shows_it(page, app_url):
    """The table is only sent while its expander is open (`own_input`): closing it must not lose an edit."""
    grid = open_editor(page, app_url)
    fill_cell(page, grid, 0, 1, "5")
    edited = expected_output(LESSON_TOKENS, FIRST_EDIT_X)
    assert output_texts(page)[:12] == edited
    expander = page.locator(EXPANDER).filter(has_text="Use your own tokens and embeddings")
    expander.locator("summary").click()
    page.wait_for_function("() => !document.querySelector('[data-testid=stDataFrame]')", timeout=60_000)
    settle(page)
    assert output_texts(page)[:12] == edited and query(page)["X"] == [format_matrix(FIRST_EDIT_X)]
    grid = open_editor(page, app_url=None)
    assert cells(page, grid)[:5] == ["the", "5", "0", "1", "0"]
    assert output_texts(page)[:12] == edited
