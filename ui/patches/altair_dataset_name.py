"""Naming a chart's inline datasets without writing them out as JSON.

Altair names each inline dataset by a hash of its content (``altair.vegalite.v6.api._dataset_name``: a SHA-256 of
the rows as sorted JSON), so that equal tables in one chart are sent once. The patch names `Rows` by their digest
(a hash of their columns' bytes, `Rows.digest`) and a list of rows by a hash of its pickle (without pickle's memo,
so equal rows give equal bytes whether or not they share objects), in the same form, ``data-`` and 32 hex digits,
which `ui.charts.spec.stable_spec` then replaces by positional names. Anything else (an ``InlineDataset``, no rows,
rows that cannot be pickled) goes to Altair's own function.
"""

from __future__ import annotations

import hashlib
import io
import pickle
from typing import Any

from ui.charts.inline_data import Rows
from ui.patches import Patch


def dataset_name(values: Any) -> str:
    """Altair's name for an inline dataset (``data-`` and 32 hex digits): for `Rows`, from their columns; for a
    list of rows, from their pickle rather than their JSON."""
    if isinstance(values, Rows):
        return "data-" + values.digest()
    if not isinstance(values, list) or values == [{}]:  # Altair's own cases: an InlineDataset, no rows ("empty")
        return PATCH.original("_dataset_name")(values)
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=5)
    pickler.fast = True  # no memo: a repeated object is written out again, as an equal one would be
    try:
        pickler.dump(values)
    except (pickle.PicklingError, TypeError, AttributeError, ValueError, RecursionError):
        return PATCH.original("_dataset_name")(values)
    return "data-" + hashlib.sha256(buffer.getbuffer()).hexdigest()[:32]


PATCH = Patch(name="altair_dataset_name", library="altair", version="6.3.0", module="altair.vegalite.v6.api",
              replacements={"_dataset_name": dataset_name})
