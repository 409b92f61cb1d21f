"""Altair's two walks over a chart, exporting it and deep-copying it, with a short way through plain values.

Altair turns a chart into a Vega-Lite spec with ``altair.utils.schemapi._todict``, which visits every value
of the chart: every string, number and flag of every encoding, axis and mark. For each it asks, in turn, whether
it is a NumPy array, a NumPy number, a NumPy date, a schema object, a list, a dict, then whether it follows
Altair's ``SchemaLike`` protocol. That last check is a runtime ``typing`` protocol check, which looks the
protocol's members up on the value's class with `inspect.getattr_static`; for a plain string it is most of the
cost of the visit. Composing charts with a selection to lift deep-copies every sub-chart with
``schemapi._deep_copy``, which for each schema object asks the object (through its ``__getattr__``) for a
``__deepcopy__`` method it does not have, and switches Altair's debug mode off and on around creating it.

The patch wraps both walks. A value of a plain JSON type (``str``, ``int``, ``float``, ``bool``, None;
exactly those types, not subclasses such as NumPy's ``float64``), a plain ``dict``, ``list`` or ``tuple``, and,
in a copy, a schema object without a ``__deepcopy__`` of its own, are handled here the way Altair handles them;
every other value goes to Altair's own function. Both recurse through the module's names, so the short way is
taken at every depth. The results are the same (the tests compare every page's specs with Altair's own); with
Altair's debug mode on, copies go to Altair's own function, which switches it off around each new object.
"""

from __future__ import annotations

import sys
from typing import Any

from altair import SchemaBase, Undefined

from ui.patches import Patch

#: The types of JSON's scalar values: Altair's export returns them as they are.
_PLAIN = frozenset({str, int, float, bool, type(None)})


def _todict(obj: Any, context: dict[str, Any] | None, np_opt: Any, pd_opt: Any) -> Any:
    """``schemapi._todict``: a chart's value as JSON data (a dict drops its `Undefined` entries)."""
    kind = type(obj)
    if kind in _PLAIN:
        return obj
    if kind is dict:
        return {k: _todict(v, context, np_opt, pd_opt) for k, v in obj.items() if v is not Undefined}
    if kind is list or kind is tuple:
        return [_todict(v, context, np_opt, pd_opt) for v in obj]
    return PATCH.original("_todict")(obj, context, np_opt, pd_opt)


def _deep_copy(obj: Any, by_ref: set[str]) -> Any:
    """``schemapi._deep_copy``: a copy of every schema object, list and dict in `obj`; entries named in
    `by_ref` (and any other value) are shared."""
    kind = type(obj)
    if kind is list:
        return [_deep_copy(v, by_ref) for v in obj]
    if kind is dict:
        return {k: (v if k in by_ref else _deep_copy(v, by_ref)) for k, v in obj.items()}
    if (isinstance(obj, SchemaBase) and not hasattr(kind, "__deepcopy__")
            and not sys.modules[PATCH.module].DEBUG_MODE):
        return kind(*[_deep_copy(a, by_ref) for a in obj._args],
                    **{k: (v if k in by_ref else _deep_copy(v, by_ref)) for k, v in obj._kwds.items()})
    return PATCH.original("_deep_copy")(obj, by_ref)


PATCH = Patch(name="altair_walks", library="altair", version="6.3.0", module="altair.utils.schemapi",
              replacements={"_todict": _todict, "_deep_copy": _deep_copy}, requires=("DEBUG_MODE",))
