"""How chart data travel to the browser: as Arrow tables built directly, not through pandas on every rerun."""

import pyarrow as pa

from tests.helpers.apptest import run_page
from ui.display import arrow_datasets


def test_row_lists_become_arrow_tables_with_the_same_rows():
    rows = [{"row": "the", "col": "d0", "value": 1.0, "i": 0}, {"row": "cat", "col": "d1", "value": -0.5, "i": 1}]
    spec = {"mark": "rect", "datasets": {"d0": rows}}
    out = arrow_datasets(spec)
    assert isinstance(out["datasets"]["d0"], pa.Table) and out["datasets"]["d0"].to_pylist() == rows
    assert spec["datasets"]["d0"] is rows  # the caller's spec (cached, read by the export menu) is untouched


def test_a_column_arrow_cannot_type_is_left_to_streamlit():
    mixed = [{"value": "−∞"}, {"value": 0.5}]
    assert arrow_datasets({"datasets": {"d": mixed}})["datasets"]["d"] is mixed
    assert arrow_datasets({"mark": "rect"}) == {"mark": "rect"}


def test_the_worked_example_ships_its_charts_without_a_pandas_round_trip():
    """Streamlit's own conversion of a list of rows goes through pandas and tags the Arrow schema with it."""
    at = run_page(None)
    datasets = [d for el in at.get("vega_lite_chart") for d in el.proto.datasets]
    assert len(datasets) >= 11
    for d in datasets:
        schema = pa.ipc.open_stream(d.data.data).schema
        assert b"pandas" not in (schema.metadata or {}), d.name
