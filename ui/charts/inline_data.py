"""A chart's table as Vega-Lite inline data: `Rows`, the columns of the rows Altair's default data transformer makes.

Altair turns a DataFrame into a list of row dicts (``{"values": [...]}``) with its default data transformer.
That transformer first copies the frame and rewrites every column as Python objects, then asks pandas for the
records; the app then turned those rows back into columns, as Arrow, to send them. Here a table stays columns
all the way: `inline_rows` gives Altair ``{"values": Rows(columns)}``, and `ui.display.arrow_datasets` makes the
Arrow table from the same columns. No row is made unless something asks for one (an export, a test).

The rows a `Rows` gives are exactly what Altair gives (the tests compare every page's specs): floats as Python
floats with NaN and ±inf as ``None`` (JSON has neither), integers and booleans as Python ints and bools, text as
text. Any other kind of column (categorical, datetime, nullable, objects that are not text), or anything that
is not a DataFrame, goes to Altair's own transformer. `ROWS` is its name in ``alt.data_transformers``;
`ui.display.prepare_altair` enables it.

Altair then names each inline dataset by a hash of its content (`Rows` by their ``repr``, which holds
`Rows.digest`, a hash of their columns' bytes), so that equal tables in one chart are sent once;
`ui.charts.spec.stable_spec` then replaces the names by positional ones. (A chart built as a part,
`ui.charts.template`, gets positional names directly: its data never go through Altair's naming.)
"""
from __future__ import annotations

import hashlib
import weakref
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import altair as alt
import numpy as np
import pandas as pd
import pyarrow as pa

#: The transformer's name in Altair's registry.
ROWS = "inline_rows"


class Rows(Sequence[dict[str, Any]]):
    """A chart's inline dataset, kept as its columns: the rows Vega-Lite reads, made only when asked for.

    It reads like the list of row dicts Altair would hold (index, slice, iterate, compare with a list), with
    JSON's values: floats as Python floats with NaN and ±inf as None, integers and booleans as Python ints
    and bools, text as text. Nothing builds the rows on the way to the browser: `to_arrow` makes the Arrow
    table Streamlit sends straight from the columns. The rows are made for an export or a test.
    """

    __slots__ = ("columns", "_digest", "_rows")

    def __init__(self, columns: Mapping[str, Any]) -> None:
        arrays = {str(name): np.asarray(values) for name, values in columns.items()}
        lengths = {len(a) for a in arrays.values()}
        if any(a.ndim != 1 for a in arrays.values()) or len(lengths) > 1:
            raise ValueError(f"a table's columns must be 1-D and of one length, not {_shapes(arrays)}")
        for a in arrays.values():
            a.flags.writeable = False  # shared by every session that draws the chart
        self.columns: dict[str, np.ndarray] = arrays
        self._digest: str | None = None
        self._rows: list[dict[str, Any]] | None = None

    @classmethod
    def from_frame(cls, frame: pd.DataFrame) -> Rows:
        """A DataFrame's columns as `Rows` (plain columns only: those `inline_rows` keeps)."""
        found = inline_rows(frame).get("values")
        if not isinstance(found, Rows):
            raise TypeError(f"columns of kinds Rows does not hold: {dict(frame.dtypes.astype(str))}")
        return found

    @property
    def nbytes(self) -> int:
        """The bytes of the columns (what a cache of charts holds for this table)."""
        return sum(a.nbytes for a in self.columns.values())

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def __getitem__(self, index):  # type: ignore[override]
        return self.rows()[index]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Rows):
            return self.rows() == other.rows()
        # Lengths first: Altair compares every dataset with ``[{}]`` (no rows) before naming it.
        return isinstance(other, list) and len(other) == len(self) and self.rows() == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:  # also what Altair's view naming hashes (`json.dumps(..., default=str)`)
        return f"Rows({len(self)} rows of {', '.join(self.columns)}; {self.digest()})"

    def rows(self) -> list[dict[str, Any]]:
        """The rows as JSON-ready dicts (made once)."""
        if self._rows is None:
            lists = {name: _json_values(a) for name, a in self.columns.items()}
            self._rows = [dict(zip(lists, row, strict=True)) for row in zip(*lists.values(), strict=True)]
        return self._rows

    def digest(self) -> str:
        """32 hex digits that differ for tables of different columns, kinds or values."""
        if self._digest is None:
            h = hashlib.sha256()
            for name, a in self.columns.items():
                h.update(f"{name}\x00{a.dtype.str}\x00".encode())
                h.update("\x1f".join(map(str, a.tolist())).encode() if a.dtype.kind == "O"
                         else np.ascontiguousarray(a).tobytes())
            self._digest = h.hexdigest()[:32]
        return self._digest

    def to_arrow(self) -> pa.Table:
        """The table as Arrow, typed as in the rows (`arrow_array`); a `shared_column` as the Arrow array it has."""
        arrays = []
        for a in self.columns.values():
            shared = _ARROW_OF_SHARED.get(id(a))
            arrays.append(arrow_array(a) if shared is None else shared)
        return pa.Table.from_arrays(arrays, names=list(self.columns))


def arrow_array(a: np.ndarray) -> pa.Array:
    """A column as Arrow, typed as in the rows: floats as doubles (non-finite as null), integers as int64, booleans,
    and anything else as text."""
    if a.dtype.kind == "f":
        finite = np.isfinite(a)
        return pa.array(a.astype(np.float64, copy=False), mask=None if finite.all() else ~finite)
    if a.dtype.kind in "iu":
        return pa.array(a.astype(np.int64, copy=False))
    if a.dtype.kind == "b":
        return pa.array(a)
    # text, as NumPy's fixed-width strings or as objects: through Python strings, which Arrow copies
    return pa.array(a.tolist(), type=pa.string())  # faster than reading fixed-width ones


#: The Arrow arrays of the `shared_column` s alive, by the column's id (dropped when the column is freed).
_ARROW_OF_SHARED: dict[int, pa.Array] = {}


def shared_column(values: Any) -> np.ndarray:
    """`values` as a new read-only column for many tables to share (the labels of a map's cells, a constant), its
    Arrow array made now, once for every table that holds it (`Rows.to_arrow`)."""
    a = np.array(values)
    a.flags.writeable = False
    _ARROW_OF_SHARED[id(a)] = arrow_array(a)
    weakref.finalize(a, _ARROW_OF_SHARED.pop, id(a), None)  # before its id can be another array's
    return a


def _shapes(arrays: Mapping[str, np.ndarray]) -> dict[str, tuple[int, ...]]:
    return {name: a.shape for name, a in arrays.items()}


def _json_values(a: np.ndarray) -> list[Any]:
    """A column as JSON-ready Python values: non-finite floats become None, as in Altair's rows."""
    values = a.tolist()
    if a.dtype.kind == "f" and not np.isfinite(a).all():
        return [v if np.isfinite(v) else None for v in values]
    return values


def _column(values: pd.Series) -> np.ndarray | None:
    """A column as an array `Rows` holds, for the kinds Altair's rows hold as JSON values; None for a kind left to
    Altair (categorical, nullable, dates, objects that are not all text)."""
    dtype = values.dtype
    if isinstance(dtype, pd.StringDtype) or pd.api.types.is_object_dtype(dtype):
        column = values.to_numpy(dtype=object)
        return column if pd.api.types.infer_dtype(column, skipna=False) in ("string", "empty") else None
    if isinstance(dtype, np.dtype) and dtype.kind in "fiub":
        return values.to_numpy()
    return None


def inline_rows(data: Any) -> dict[str, Any]:
    """Altair data transformer: ``{"values": Rows}`` for a plain DataFrame, else Altair's default."""
    if (isinstance(data, pd.DataFrame) and len(data.columns) and data.columns.is_unique
            and not isinstance(data.index, pd.MultiIndex) and all(isinstance(c, str) for c in data.columns)):
        columns = {name: _column(data[name]) for name in data.columns}
        if all(c is not None for c in columns.values()):
            return {"values": Rows(columns)}
    return alt.to_values(data)


def use_inline_rows() -> None:
    """Register `inline_rows` with Altair and make it the active data transformer (idempotent), with no row limit.

    Public set-up (``alt.data_transformers``), not a patch of Altair's code.

    Cheap when it is active already: the router calls it on every run, and asking Altair's registry for its
    plugin names reads every installed package's entry points.
    """
    if alt.data_transformers.active != ROWS:
        alt.data_transformers.register(ROWS, inline_rows)
        alt.data_transformers.enable(ROWS)
