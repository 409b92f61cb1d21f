"""How chart data travel to the browser: as Arrow bytes made once per spec, not through pandas on every rerun."""

import pyarrow as pa
from streamlit import dataframe_util

from tests.helpers.apptest import run_page
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
