"""How chart data travel to the browser: as Arrow bytes made once per spec, not through pandas on every rerun; and
what every chart sent carries for a phone and a screen reader (text size, a name)."""

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from streamlit import dataframe_util

from devtools.appserver import router_pages
from tests.helpers.apptest import chart_specs, run_page
from tests.helpers.exports import page_matrices
from ui.charts.spec import MIN_FONT_PX, font_sizes
from ui.display import arrow_datasets


def table_of(ipc: bytes) -> pa.Table:
    return pa.ipc.open_stream(ipc).read_all()


def test_row_lists_become_arrow_bytes_with_the_same_rows():
    rows = [{"row": "the", "col": "d0", "value": 1.0, "i": 0}, {"row": "cat", "col": "d1", "value": -0.5, "i": 1}]
    spec = {"mark": "rect", "datasets": {"d0": rows}}
    out = arrow_datasets(spec)
    assert isinstance(out["datasets"]["d0"], bytes) and table_of(out["datasets"]["d0"]).to_pylist() == rows
    assert spec["datasets"]["d0"] is rows  # the caller's spec (cached, read by the export menu) is untouched


def test_a_column_arrow_cannot_type_is_sent_as_text_as_streamlits_own_conversion_sends_it():
    mixed = [{"value": "−∞", "i": 0}, {"value": 0.5, "i": 1}, {"value": None, "i": 2}]
    ipc = arrow_datasets({"datasets": {"d": mixed}})["datasets"]["d"]
    streamlits = table_of(dataframe_util.convert_anything_to_arrow_bytes(mixed))  # a test may read Streamlit's
    assert table_of(ipc).to_pylist() == streamlits.to_pylist() == [{"value": "−∞", "i": 0}, {"value": "0.5", "i": 1},
                                                                   {"value": None, "i": 2}]
    assert arrow_datasets({"mark": "rect"}) == {"mark": "rect"}


def test_streamlit_sends_the_bytes_as_they_are(monkeypatch):
    """Given bytes, ``st.vega_lite_chart`` serialises nothing on a rerun: the bytes made once are what it sends."""
    from ui import display

    made = []
    real = display.arrow_bytes
    monkeypatch.setattr(display, "arrow_bytes", lambda table: made.append(table) or real(table))
    monkeypatch.setattr(display, "_PREPARED", display.collections.OrderedDict())  # nothing drawn yet
    at = run_page("app_pages/masked_attention.py", seed="23", seq_len="4")
    assert made  # the specs were new to `show_chart`: their datasets were serialised, once each
    sent = [d.data.data for el in at.get("vega_lite_chart") for d in el.proto.datasets]
    made.clear()
    at.run()
    assert made == [] and [d.data.data for el in at.get("vega_lite_chart") for d in el.proto.datasets] == sent


def test_the_worked_example_ships_its_charts_without_a_pandas_round_trip():
    """Streamlit's own conversion of a list of rows goes through pandas and tags the Arrow schema with it."""
    at = run_page(None)
    datasets = [d for el in at.get("vega_lite_chart") for d in el.proto.datasets]
    assert len(datasets) >= 11
    for d in datasets:
        schema = pa.ipc.open_stream(d.data.data).schema
        assert b"pandas" not in (schema.metadata or {}), d.name


def test_a_spec_drawn_again_is_prepared_once(monkeypatch):
    """`show_chart` remembers what it sent for a spec dict (by identity, per presenter mode); a chart object, new on
    every call, is prepared every time."""
    import altair as alt

    from ui import display

    calls = []
    monkeypatch.setattr(display, "_prepare", lambda chart, presenter: calls.append((chart, presenter)) or ({}, {}))
    monkeypatch.setattr(display, "_PREPARED", display.collections.OrderedDict())
    spec = {"mark": "rect", "datasets": {"d0": [{"value": 1.0}]}}
    for _ in range(3):
        display._as_drawn(spec, False)
    assert len(calls) == 1
    display._as_drawn(spec, True)  # presenter mode: a different spec goes out
    display._as_drawn(dict(spec), False)  # an equal dict, but not the one remembered
    chart = alt.Chart().mark_rect()
    display._as_drawn(chart, False)
    display._as_drawn(chart, False)
    assert len(calls) == 5


def test_the_remembered_specs_are_bounded(monkeypatch):
    from ui import display

    monkeypatch.setattr(display, "_PREPARED", display.collections.OrderedDict())
    monkeypatch.setattr(display, "_PREPARED_MAX", 3)
    specs = [{"mark": "rect", "n": k} for k in range(5)]
    for spec in specs:
        display._as_drawn(spec, False)
    assert [entry[0] for entry in display._PREPARED.values()] == specs[2:]


def test_a_second_session_at_the_same_setting_gets_the_same_prepared_charts():
    """The pages cache their specs with `ui.cache.shared_cache` (the same dict for every session), so a second
    student at a setting the first one drew adds nothing to what `show_chart` remembers."""
    from ui import display

    run_page("app_pages/masked_attention.py", seed="17", seq_len="5")
    remembered = set(display._PREPARED)
    run_page("app_pages/masked_attention.py", seed="17", seq_len="5")
    assert remembered and set(display._PREPARED) == remembered


CHART_PAGES = [p for p in router_pages() if p.name not in ("exercise", "training")]  # no chart until a student acts


@pytest.mark.parametrize("present", ["false", "true"])
@pytest.mark.parametrize("page", CHART_PAGES, ids=lambda p: p.name)
def test_every_chart_sent_draws_its_text_at_11_px_or_more(page, present):
    """A phone student can read every label and cell value: no font size a chart sends is below 11 CSS px
    (`ui.charts.spec.readable_text`; Streamlit's own theme draws labels at 12 px)."""
    specs = chart_specs(run_page(page.file, present=present))
    assert specs, f"{page.name}: no chart"
    small = {size for spec, _ in specs for size in font_sizes(spec) if size < MIN_FONT_PX}
    assert not small, f"{page.name}: chart text at {sorted(small)} px"


@pytest.mark.parametrize("page", CHART_PAGES, ids=lambda p: p.name)
def test_every_chart_sent_has_a_name_a_screen_reader_reads(page):
    """Each chart's accessible name: its ``alt`` (`show_chart`'s keyword; Streamlit puts it on the chart as
    ``aria-label``) or its spec's description. Without either a screen reader hears only "Vega visualization"."""
    charts = run_page(page.file).get("vega_lite_chart")
    assert charts, f"{page.name}: no chart"
    unnamed = [json.loads(c.proto.spec).get("title") for c in charts
               if not c.proto.alt.strip() and not str(json.loads(c.proto.spec).get("description", "")).strip()]
    assert not unnamed, f"{page.name}: {len(unnamed)} of {len(charts)} charts have no name: {unnamed}"


@pytest.mark.parametrize("page", CHART_PAGES, ids=lambda p: p.name)
def test_every_charts_name_says_what_it_draws_and_its_shape(page):
    """A generic name ("Heatmap of the attention weights") is not enough: each chart's name gives numbers of what
    it draws (its shape, its range), and its numbers follow in a caption (`ui.chart_names`)."""
    charts = run_page(page.file).get("vega_lite_chart")
    generic = [c.proto.alt for c in charts if not any(ch.isdigit() for ch in c.proto.alt)]
    assert not generic, f"{page.name}: {len(generic)} of {len(charts)} chart names hold no number: {generic}"


SEED_PAGES = [p for p in CHART_PAGES if "seed_slider(" in Path(p.file).read_text()]


@pytest.mark.parametrize("page", SEED_PAGES, ids=lambda p: p.name)
def test_a_seed_step_keeps_every_charts_name_and_changes_its_numbers(page):
    """Streamlit's front end builds a new view for a chart whose name changed (`tests/browser/test_browser.py`
    times that): a new seed changes the numbers read after a chart, never its name."""
    first, second = (run_page(page.file, seed=seed) for seed in ("3", "11"))
    assert [c.proto.alt for c in first.get("vega_lite_chart")] == [c.proto.alt for c in second.get("vega_lite_chart")]
    assert [c.value for c in first.caption] != [c.value for c in second.caption]


def test_the_worked_examples_weights_chart_is_followed_by_the_lessons_largest_weight():
    from core import worked_example

    ex = worked_example(0)
    i, j = np.unravel_index(np.argmax(ex.weights), ex.weights.shape)  # the lesson's largest A_ij at seed 0
    at = run_page("app_pages/worked_example.py")
    assert "Heatmap of the attention weights, 3 queries by 3 keys" in [c.proto.alt for c in at.get("vega_lite_chart")]
    expected = f"Largest weight {ex.weights[i, j]:.2f}, from '{ex.tokens[i]}' to '{ex.tokens[j]}'."
    assert expected in [c.value for c in at.caption], [c.value for c in at.caption]


NUMBERS_PAGES = ("worked_example", "multi_head", "masked_attention")


@pytest.mark.parametrize("page", [p for p in CHART_PAGES if p.name in NUMBERS_PAGES],
                         ids=lambda p: p.name)
def test_show_the_numbers_sends_every_matrix_of_the_charts_as_a_table_only_when_opened(page):
    """Nothing lives only in colour or on hover: every matrix the page's charts draw is a real table, with its
    row and column labels, in the "Show the numbers" expander; closed, the expander sends no table."""
    at = run_page(page.file)
    expanders = [e for e in at.expander if e.label == "Show the numbers"]
    assert len(expanders) == 1, f"{page.name}: {len(expanders)} 'Show the numbers' expanders"
    assert not at.table
    at.session_state[expanders[0].proto.id.split("-", 2)[-1]] = True
    at.run()
    matrices = page_matrices(at)
    tables = [t.value for t in at.table]
    assert len(tables) == len(matrices) > 0
    for table, (matrix, rows, cols) in zip(tables, matrices.values(), strict=True):
        assert list(table.index) == list(rows) and [str(c) for c in table.columns] == list(cols)
        shown = table.to_numpy(dtype=float)  # a masked score is −∞ in the table, a missing cell in the chart's data
        np.testing.assert_allclose(np.where(np.isinf(shown), np.nan, shown), matrix, atol=5e-4)
