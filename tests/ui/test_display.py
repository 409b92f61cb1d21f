"""How chart data travel to the browser: as Arrow bytes made once per spec, not through pandas on every rerun; and
what every chart sent carries for a phone and a screen reader (text size, a name)."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from streamlit import dataframe_util

from core.worked_example import worked_example
from devtools.appserver import router_pages
from tests.helpers.apptest import chart_specs, run_page
from tests.helpers.exports import page_matrices
from ui.charts.spec import MIN_FONT_PX, font_sizes
from ui.charts.tooltips import softmax_tooltips
from ui.display import arrow_datasets
from ui.export import matrix_titles, series_tables, tooltip_tables
from ui.remembered import Remembered


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
    monkeypatch.setattr(display, "_PREPARED", Remembered(512))  # nothing drawn yet
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
    monkeypatch.setattr(display, "_PREPARED", Remembered(512))
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


def test_a_new_setting_of_a_known_shape_converts_only_its_data(monkeypatch):
    """Two settings of one chart share their structure (`part_spec`): the second is made readable, stable and
    sized by the structure prepared for the first, and both are what preparing each anew gives, dataset names
    included (Altair's hashed names become positional ones)."""
    from ui import display
    from ui.charts.heatmap import heatmap_part
    from ui.charts.template import part_spec

    monkeypatch.setattr(display, "_STRUCTURES_PREPARED", Remembered(512))
    specs = [part_spec(heatmap_part(np.random.default_rng(seed).normal(size=(3, 4)), title="X"), canvas=True)
             for seed in (0, 1)]
    hashed = {"mark": "rect", "encoding": {"x": {"field": "value"}}, "data": {"name": "data-" + "0" * 32},
              "datasets": {"data-" + "0" * 32: [{"value": 1.0}]}}
    expected = [display._prepare_structure(spec, presenter) for spec in (*specs, hashed) for presenter in (False, True)]
    walks = []
    real = display.readable_text
    monkeypatch.setattr(display, "readable_text", lambda spec: walks.append(spec) or real(spec))
    for presenter in (False, True):
        for spec in specs:
            sent, drawn = display._prepare(spec, presenter)
            want_sent, want_drawn = expected[specs.index(spec) * 2 + presenter]
            assert sent == want_sent and drawn == arrow_datasets(want_drawn)
            assert "aria" in drawn["config"] and sent["datasets"]["d0"] is spec["datasets"]["d0"]
    assert len(walks) == 2  # once per presenter mode, not once per setting
    sent, drawn = display._prepare(hashed, False)
    assert sent == expected[4][0] and list(sent["datasets"]) == ["d0"] and sent["data"] == {"name": "d0"}
    assert drawn == arrow_datasets(expected[4][1])


def test_the_remembered_specs_are_bounded(monkeypatch):
    from ui import display

    monkeypatch.setattr(display, "_PREPARED", Remembered(3))
    specs = [{"mark": "rect", "n": k} for k in range(5)]
    for spec in specs:
        display._as_drawn(spec, False)
    assert [entry[0] for entry in display._PREPARED.entries.values()] == specs[2:]


def test_a_second_session_at_the_same_setting_gets_the_same_prepared_charts():
    """The pages cache their specs with `ui.cache.shared_cache` (the same dict for every session), so a second
    student at a setting the first one drew adds nothing to what `show_chart` remembers."""
    from ui import display

    run_page("app_pages/masked_attention.py", seed="17", seq_len="5")
    remembered = set(display._PREPARED.entries)
    run_page("app_pages/masked_attention.py", seed="17", seq_len="5")
    assert remembered and set(display._PREPARED.entries) == remembered


#: Pages that draw no chart until a student acts.
CHART_PAGES = [p for p in router_pages() if p.name not in ("exercise", "training", "decoder")]


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
    """Streamlit's front end builds a new view for a chart whose name changed (`tests/browser/test_reruns.py` checks
    that a seed step keeps every view): a new seed changes the numbers read after a chart, never its name."""
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
    assert expanders, f"{page.name}: no 'Show the numbers' expander"
    assert not at.table
    for expander in expanders:
        at.session_state[expander.proto.id.split("-", 2)[-1]] = True
    at.run()
    matrices = page_matrices(at)
    # each chart's matrices, the steps of its tooltips' arithmetic and its lines' values (tested below)
    sent = [{**spec, "datasets": frames} for spec, frames in chart_specs(at)]
    expected = sum(len(matrix_titles(s)) + len(list(tooltip_tables(s))) + len(series_tables(s)) for s in sent)
    tables = [t.value for t in at.table]
    assert len(tables) == expected and len(matrices) > 0
    for title, (matrix, rows, cols) in matrices.items():
        labelled = [t for t in tables if list(t.index) == list(rows) and [str(c) for c in t.columns] == list(cols)
                    and t.shape == matrix.shape and all(pd.api.types.is_numeric_dtype(d) for d in t.dtypes)]
        shown = [t.to_numpy(dtype=float) for t in labelled]  # a masked score is −∞ in a table, absent in the data
        assert any(np.allclose(np.where(np.isinf(v), np.nan, v), matrix, atol=5e-4, equal_nan=True) for v in shown), \
            f"{page.name}: no table holds {title!r}"


def test_the_arithmetic_a_tooltip_shows_is_a_table_too():
    """Nothing only on hover: on the worked example, "Show the numbers" holds each step of the softmax as the
    weights' tooltip shows it, cell by cell, for the lesson's three tokens ('sat' to 'sat': 0.66)."""
    at = run_page("app_pages/worked_example.py")
    at.session_state[next(e for e in at.expander if e.label == "Show the numbers").proto.id.split("-", 2)[-1]] = True
    at.run()
    titles = [m.value for m in at.markdown if m.value.startswith("**")]
    step_titles = [t for t in titles if "cell by cell" in t]
    assert any("row sum of exp" in t for t in step_titles) and any("A_ij = exp / row sum" in t for t in step_titles)
    ex = worked_example()
    labels = list(ex.tokens)
    expected = softmax_tooltips(ex.Q, ex.K, row_labels=labels, col_labels=labels)["A_ij = exp / row sum"]
    shown = next(t.value for t in at.table if t.value.shape == expected.shape
                 and str(t.value.iloc[2, 2]).endswith(f"= {ex.weights[2, 2]:.4f}"))
    assert shown.to_numpy().tolist() == expected.tolist()
    assert "= 0.66" in shown.loc["sat", "sat"]  # the lesson prints 0.66


@pytest.mark.parametrize("page", CHART_PAGES, ids=lambda p: p.name)
def test_every_chart_on_every_page_can_be_read_as_tables(page):
    """Every chart a page sends, heatmap, line, point or bar chart, has its numbers in at least one table of
    "Show the numbers" (`ui.export.chart_matrix`, `series_tables`)."""
    sent = [{**spec, "datasets": frames} for spec, frames in chart_specs(run_page(page.file))]
    untabled = [spec.get("title") or spec.get("description") for spec in sent
                if not matrix_titles(spec) and not series_tables(spec)]
    assert not untabled, f"{page.name}: {len(untabled)} of {len(sent)} charts have no table"


def test_a_line_charts_values_are_a_table_the_lessons_limits_included():
    """The soft lookup's weight curves as a table, one column per key, one row per temperature: at the lowest τ the
    best key takes all the weight (the hard lookup), at the highest every key gets about 1/5 (the plain average)."""
    at = run_page("app_pages/soft_lookup.py")
    for e in at.expander:
        if e.label == "Show the numbers":
            at.session_state[e.proto.id.split("-", 2)[-1]] = True
    at.run()
    heading = next(i for i, m in enumerate(at.markdown) if m.value.startswith("**Each key's weight**"))
    assert heading >= 0
    curves = next(t.value for t in at.table if list(t.value.columns) == ["banana", "grape", "pineapple", "lemon",
                                                                         "cranberry"])
    coldest, hottest = curves.iloc[0].astype(float), curves.iloc[-1].astype(float)
    assert coldest["banana"] == 1.0 and coldest.drop("banana").max() == 0.0
    np.testing.assert_allclose(hottest.to_numpy(), 0.2, atol=0.02)
