"""Reading exported Vega-Lite specs in tests: the spec as the app draws it, and the colour domain a scale uses."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from ui.charts.spec import THIS_DATA, stable_spec

#: The expression `ui.charts.domain_from_data` writes, once `stable_spec` has named the dataset.
DOMAIN_EXPR = re.compile(r"\[data\('([^']+)'\)\[0\]\.(\w+), data\('\1'\)\[0\]\.(\w+)\]")


def exported(chart) -> dict[str, Any]:
    """The chart's spec, validated against the Vega-Lite schema, with its datasets named as the app names them."""
    return stable_spec(chart.to_dict())


def colour_domain(spec: dict[str, Any], scale: dict[str, Any]) -> list[float]:
    """The domain `scale` (a scale inside `spec`) draws with: its literal ``domain``, or the ``[lo, hi]`` that
    `ui.charts.domain_from_data` reads from the first row of the view's dataset."""
    domain = scale["domain"]
    if isinstance(domain, list):
        return domain
    assert THIS_DATA not in domain["expr"], "export the spec with ui.charts.stable_spec first"
    name, lo, hi = DOMAIN_EXPR.fullmatch(domain["expr"]).groups()
    first = spec["datasets"][name][0]
    return [first[lo], first[hi]]


def single_data(spec: dict[str, Any]) -> pd.DataFrame:
    """The one dataset of a spec, as a DataFrame."""
    (values,) = spec["datasets"].values()
    return pd.DataFrame(values)

