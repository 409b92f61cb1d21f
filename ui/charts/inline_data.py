"""A chart's table as Vega-Lite inline rows: the rows Altair's default data transformer makes, made directly.

Altair turns a DataFrame into a list of row dicts (``{"values": [...]}``) with its default data transformer.
That transformer first copies the frame and rewrites every column as Python objects (``sanitize_pandas_dataframe``),
then asks pandas for the records: for the small, plain tables the chart modules build, more work than the rest
of exporting the chart. `inline_rows` reads each column once as a Python list and zips the rows.

It gives exactly what Altair gives (the tests compare every page's specs): floats as Python floats with NaN and
±inf as ``None`` (JSON has neither), integers and booleans as Python ints and bools, text as text. Any other
kind of column (categorical, datetime, nullable, objects that are not text), or anything that is not a
DataFrame, goes to Altair's own transformer. `ROWS` is its name in ``alt.data_transformers``;
`ui.display.prepare_altair` enables it.

Altair then names each inline dataset by a hash of its content, so that equal tables in one chart are sent once:
a SHA-256 of the rows as sorted JSON, which takes longer than making the rows. `dataset_name` hashes their
pickle instead (without pickle's memo, so equal rows give equal bytes whether or not they share objects), in
the same form, ``data-`` and 32 hex digits, which `ui.charts.spec.stable_spec` then replaces by positional
names. Rows equal as JSON are equal as pickles when their values have the same types and their keys the same
order, which holds for the rows of one builder.
"""

from __future__ import annotations

import hashlib
import io
import pickle
from typing import Any

import altair as alt
import numpy as np
import pandas as pd
from altair.utils.data import to_values
from altair.vegalite.v6 import api

#: The transformer's name in Altair's registry.
ROWS = "inline_rows"
#: Altair's own naming of an inline dataset, as imported (tests swap it back in to compare).
ALTAIR_DATASET_NAMING = api._dataset_name


def _column(values: pd.Series) -> list[Any] | None:
    """A column as JSON-ready Python values, as Altair would make them; None for a kind left to Altair."""
    dtype = values.dtype
    if isinstance(dtype, pd.StringDtype) or pd.api.types.is_object_dtype(dtype):
        column = values.tolist()
        return column if all(isinstance(v, str) for v in column) else None
    if not isinstance(dtype, np.dtype):  # categorical, nullable numbers, dates with a time zone, ...
        return None
    if dtype.kind == "f":
        array = values.to_numpy()
        column = array.tolist()
        if not np.isfinite(array).all():
            column = [v if np.isfinite(v) else None for v in column]
        return column
    if dtype.kind in "iub":  # ints and bools
        return values.tolist()
    return None  # dates, durations, complex numbers


def inline_rows(data: Any) -> dict[str, Any]:
    """Altair data transformer: ``{"values": [row dict, ...]}`` for a plain DataFrame, else Altair's default."""
    if (isinstance(data, pd.DataFrame) and len(data.columns) and data.columns.is_unique
            and not isinstance(data.index, pd.MultiIndex) and all(isinstance(c, str) for c in data.columns)):
        columns = [_column(data[name]) for name in data.columns]
        if all(c is not None for c in columns):
            names = list(data.columns)
            return {"values": [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]}
    return to_values(data)


def dataset_name(values: Any) -> str:
    """Altair's name for an inline dataset (``data-`` and 32 hex digits), from its pickle rather than its JSON."""
    if not isinstance(values, list) or values == [{}]:  # Altair's own cases: an InlineDataset, no rows ("empty")
        return ALTAIR_DATASET_NAMING(values)
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=5)
    pickler.fast = True  # no memo: a repeated object is written out again, as an equal one would be
    try:
        pickler.dump(values)
    except (pickle.PicklingError, TypeError, AttributeError, ValueError, RecursionError):
        return ALTAIR_DATASET_NAMING(values)
    return "data-" + hashlib.sha256(buffer.getbuffer()).hexdigest()[:32]


def use_inline_rows() -> None:
    """Register `inline_rows` with Altair and make it the active data transformer (idempotent), with no row limit;
    name inline datasets with `dataset_name`.

    Cheap when it is active already: the router calls it on every run, and asking Altair's registry for its
    plugin names reads every installed package's entry points.
    """
    api._dataset_name = dataset_name
    if alt.data_transformers.active != ROWS:
        alt.data_transformers.register(ROWS, inline_rows)
        alt.data_transformers.enable(ROWS)
