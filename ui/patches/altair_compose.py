"""Composing Altair charts without copying them when there is nothing to lift.

Vega-Lite wants a selection parameter declared once, at the top of a layered or concatenated chart, with the
views it applies to. Altair does that lifting whenever it composes charts, in two private helpers of
``altair.vegalite.v6.api``:

* ``_remove_duplicate_params(layer)`` drops a selection that two layers both declare;
* ``_combine_subchart_params(params, subcharts)`` moves every sub-chart's parameters up to the composite,
  naming views as needed.

Both start by deep-copying every sub-chart, whether or not it has a parameter. They also export every parameter
they lift or compare (``_prepare_to_lift``, ``_viewless_dict``), each export validated against the Vega-Lite
schema. Copying a layered chart
re-creates it, which runs both helpers again on its own layers, and ``to_dict`` makes one more such copy of
the whole composite. For the worked example's grid of six heatmaps, none with a parameter, that was most of
the time it took to build.

The patch wraps the two helpers so that they return the sub-charts as they are when
there is nothing to do: no parameter on the composite or on any direct sub-chart (deeper ones were lifted
when those sub-charts were built) and, in a concatenation, no named layer to rename. The spec is then the
same as Altair's (the tests compare 13 kinds of composition and four whole pages); anything else goes to
Altair's own helpers. The only difference is that the composite shares its sub-chart objects with the caller instead of
holding copies, and the app's builders never modify a chart after composing it. ``_prepare_to_lift`` and
``_viewless_dict`` are replaced by the same code without the schema check (the test suite validates every
whole spec).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt
from altair import Undefined

from ui.patches import Patch


def _declared(params: Any) -> bool:
    """True for a non-empty parameter list (Altair leaves one never set as Undefined)."""
    return params is not Undefined and bool(params)


def _has_params(chart: Any) -> bool:
    return _declared(getattr(chart, "params", Undefined))


def _has_named_layer(chart: Any) -> bool:
    layers = chart.layer if isinstance(chart, alt.LayerChart) else []
    return any(getattr(layer, "name", Undefined) is not Undefined for layer in layers)


def nothing_to_lift(params: Any, subcharts: Sequence[Any]) -> bool:
    """True when Altair's lifting of `params` and the `subcharts`' parameters would change nothing but copies."""
    if _declared(params) or any(_has_params(c) for c in subcharts):
        return False
    return len(subcharts) <= 1 or not any(_has_named_layer(c) for c in subcharts)


def _combine_subchart_params(params: Any, subcharts: list[Any]) -> tuple[Any, list[Any]]:
    if nothing_to_lift(params, subcharts):
        return Undefined, list(subcharts)  # as Altair: no parameters at all is Undefined, not []
    return PATCH.original("_combine_subchart_params")(params, subcharts)


def _remove_duplicate_params(layer: list[Any]) -> list[Any]:
    if not any(_has_params(c) for c in layer):
        return list(layer)
    return PATCH.original("_remove_duplicate_params")(layer)


def _prepare_to_lift(param: Any) -> Any:
    """A copy of `param` fit to be declared at the top: a selection gets a (still empty) list of views."""
    param = param.copy()
    if isinstance(param, alt.VariableParameter):
        return param
    if isinstance(param, alt.SelectionParameter):
        return alt.TopLevelSelectionParameter(**param.to_dict(validate=False), views=[])
    if param.views is Undefined:
        param.views = []
    return param


def _viewless_dict(param: Any) -> dict[str, Any]:
    """A parameter's spec without its ``views`` (what Altair compares to merge duplicates), unvalidated."""
    spec = param.to_dict(validate=False)
    spec.pop("views", None)
    return spec


PATCH = Patch(name="altair_compose", library="altair", version="6.3.0", module="altair.vegalite.v6.api",
              replacements={"_combine_subchart_params": _combine_subchart_params,
                            "_remove_duplicate_params": _remove_duplicate_params,
                            "_prepare_to_lift": _prepare_to_lift, "_viewless_dict": _viewless_dict})
