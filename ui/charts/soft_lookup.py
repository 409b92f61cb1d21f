"""Charts for the soft-lookup page: the key space, hard vs soft weights, and the temperature sweep.

Pure functions (`core.lookup` results in, `alt.Chart` or spec out), tested through ``to_dict()``. Weights
use the app's sequential scheme (viridis on [0, 1]); the two lookups are told
apart by a colour-blind-safe categorical pair *and* by position.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt
import numpy as np

from core.lookup import LookupComparison, TinyDictionary
from ui.charts.arrange import side_by_side
from ui.charts.heatmap import SEQUENTIAL_SCHEME
from ui.charts.inline_data import Rows
from ui.charts.palette import BLUE, CATEGORY, VERMILLION, VERMILLION_TEXT
from ui.charts.spec import title_from_data
from ui.charts.template import DataSource, Part, chart_of, compose, frozen, part_spec

#: Colours of the two lookups (blue and vermillion, told apart with the common colour-vision deficiencies).
LOOKUP_COLORS = {"hard (argmax)": BLUE, "soft (softmax)": VERMILLION}
#: The query's arrow and marker among the keys (which are coloured by their weight).
QUERY_COLOR, QUERY_TEXT_COLOR = VERMILLION, VERMILLION_TEXT


def key_space_chart(*args: Any, **options: Any) -> alt.LayerChart:
    """`key_space_part` as an Altair chart, its data inline."""
    return chart_of(key_space_part(*args, **options))


def key_space_part(
    keys: np.ndarray,
    key_names: Sequence[str],
    query: np.ndarray,
    weights: np.ndarray,
    scores: np.ndarray,
    values: np.ndarray,
    *,
    dims: tuple[str, str] = ("dim 0", "dim 1"),
    query_label: str = "query",
    value_name: str = "value",
    title: str = "",
    size: int = 320,
) -> Part:
    """2-D keys as points sized and coloured by their soft weight, and the query as an arrow from the origin.

    Every key point has a tooltip with its name, coordinates, score, weight and value. The axes' range, from the
    keys and the query, is part of the structure's key; the weights are data.
    """
    k = np.asarray(keys, dtype=np.float64)
    q = np.asarray(query, dtype=np.float64)
    if k.ndim != 2 or k.shape[1] != 2 or q.shape != (2,):
        raise ValueError(f"key_space_chart draws 2-D keys and query; got keys {k.shape} and query {q.shape}.")
    n = k.shape[0]
    if not (len(key_names) == len(weights) == len(scores) == len(values) == n):
        raise ValueError(f"need one name, weight, score and value per key ({n} keys).")
    x_name, y_name = dims
    keys_table = Rows({"name": list(key_names), "x": k[:, 0], "y": k[:, 1], "score": np.asarray(scores, float),
                       "weight": np.asarray(weights, float), "value": np.asarray(values, float)})
    query_table = Rows({"name": [query_label], "x0": [0.0], "y0": [0.0], "x": [q[0]], "y": [q[1]]})

    lo = min(0.0, float(k.min()), float(q.min())) - 0.1
    hi = max(float(k.max()), float(q.max())) + 0.15
    tables = (keys_table, query_table)
    key = ("key_space", frozen(key_names), lo, hi, dims, query_label, value_name, title, size)

    def make(data: DataSource) -> alt.LayerChart:
        keys_data, query_data = data(), data()
        x_enc = alt.X(field="x", type="quantitative", title=x_name, scale=alt.Scale(domain=[lo, hi], nice=False))
        y_enc = alt.Y(field="y", type="quantitative", title=y_name, scale=alt.Scale(domain=[lo, hi], nice=False))
        arrow, head, head_label = _query_layers(query_data, x_enc, y_enc, dims)
        points, labels = _key_layers(keys_data, x_enc, y_enc, dims, value_name)
        return alt.layer(arrow, points, labels, head, head_label, title=title or alt.Undefined).properties(
            width=size, height=size)

    return Part(key, make, tables)


def _key_layers(keys_data: alt.Data, x_enc: alt.X, y_enc: alt.Y, dims: tuple[str, str],
                value_name: str) -> list[alt.Chart]:
    """The keys as points sized and coloured by their soft weight (viridis on [0, 1]), each named beside it."""
    x_name, y_name = dims
    tooltip = [
        alt.Tooltip(field="name", type="nominal", title="key"),
        alt.Tooltip(field="x", type="quantitative", title=x_name, format=".2f"),
        alt.Tooltip(field="y", type="quantitative", title=y_name, format=".2f"),
        alt.Tooltip(field="score", type="quantitative", title="score q·k", format=".3f"),
        alt.Tooltip(field="weight", type="quantitative", title="soft weight", format=".3f"),
        alt.Tooltip(field="value", type="quantitative", title=value_name, format=".2f"),
    ]
    points = alt.Chart(keys_data).mark_circle(stroke="black", strokeWidth=1, opacity=1).encode(
        x=x_enc, y=y_enc, tooltip=tooltip,
        size=alt.Size(field="weight", type="quantitative", scale=alt.Scale(domain=[0, 1], range=[40, 900]),
                      legend=None),
        color=alt.Color(field="weight", type="quantitative", title="soft weight",
                        scale=alt.Scale(scheme=SEQUENTIAL_SCHEME, domain=[0, 1])),
    )
    labels = alt.Chart(keys_data).mark_text(align="left", dx=12, dy=-10, fontSize=12).encode(
        x=x_enc, y=y_enc, text=alt.Text(field="name", type="nominal"), tooltip=tooltip,
    )
    return [points, labels]


def _query_layers(query_data: alt.Data, x_enc: alt.X, y_enc: alt.Y, dims: tuple[str, str]) -> list[alt.Chart]:
    """The query as an arrow from the origin, its head a diamond, named beside it."""
    x_name, y_name = dims
    query_tooltip = [
        alt.Tooltip(field="name", type="nominal", title="query"),
        alt.Tooltip(field="x", type="quantitative", title=x_name, format=".2f"),
        alt.Tooltip(field="y", type="quantitative", title=y_name, format=".2f"),
    ]
    arrow = alt.Chart(query_data).mark_rule(color=QUERY_COLOR, strokeWidth=3).encode(
        x=alt.X(field="x0", type="quantitative"), y=alt.Y(field="y0", type="quantitative"),
        x2=alt.X2(field="x"), y2=alt.Y2(field="y"), tooltip=query_tooltip,
    )
    head = alt.Chart(query_data).mark_point(shape="diamond", filled=True, size=220, color=QUERY_COLOR).encode(
        x=x_enc, y=y_enc, tooltip=query_tooltip,
    )
    head_label = alt.Chart(query_data).mark_text(align="left", dx=10, dy=14, fontSize=12, fontWeight="bold",
                                                 color=QUERY_TEXT_COLOR).encode(
        x=x_enc, y=y_enc, text=alt.Text(field="name", type="nominal"),
    )
    return [arrow, head, head_label]


def lookup_weights_chart(*args: Any, **options: Any) -> alt.LayerChart:
    """`lookup_weights_part` as an Altair chart, its data inline."""
    return chart_of(lookup_weights_part(*args, **options))


def lookup_weights_part(
    key_names: Sequence[str],
    hard_weights: np.ndarray,
    soft_weights: np.ndarray,
    *,
    title: str = "",
    width: int = 360,
    height: int = 240,
) -> Part:
    """Grouped bars: for every key, the hard lookup's one-hot weight next to the softmax weight, values printed."""
    n = len(key_names)
    hard = np.asarray(hard_weights, dtype=np.float64)
    soft = np.asarray(soft_weights, dtype=np.float64)
    if hard.shape != (n,) or soft.shape != (n,):
        raise ValueError(f"need {n} hard and {n} soft weights, got shapes {hard.shape} and {soft.shape}.")
    kinds = list(LOOKUP_COLORS)
    table = Rows({
        "key": list(key_names) * 2,
        "lookup": [kinds[0]] * n + [kinds[1]] * n,
        "weight": np.concatenate([hard, soft]),
        "title": np.full(2 * n, title, dtype=object),  # in the data, not the spec: the title quotes the temperature
    })
    key = ("lookup_weights", frozen(key_names), bool(title), width, height)

    def make(data: DataSource) -> alt.LayerChart:
        x = alt.X(field="key", type="nominal", sort=list(key_names), title="key", axis=alt.Axis(labelAngle=0))
        y = alt.Y(field="weight", type="quantitative", title="weight", scale=alt.Scale(domain=[0, 1.08]))
        offset = alt.XOffset(field="lookup", type="nominal", sort=kinds)
        tooltip = [alt.Tooltip(field="key", type="nominal", title="key"),
                   alt.Tooltip(field="lookup", type="nominal", title="lookup"),
                   alt.Tooltip(field="weight", type="quantitative", title="weight", format=".4f")]
        bars = alt.Chart().mark_bar().encode(
            color=alt.Color(field="lookup", type="nominal", title=None, sort=kinds,
                            scale=alt.Scale(domain=kinds, range=[LOOKUP_COLORS[k] for k in kinds]),
                            legend=alt.Legend(orient="bottom")),
        )
        text = alt.Chart().mark_text(dy=-7, fontSize=10).encode(
            text=alt.Text(field="weight", type="quantitative", format=".2f"),
        )
        return (
            alt.layer(bars, text, data=data(), title=title_from_data() if title else alt.Undefined)
            .encode(x=x, y=y, xOffset=offset, tooltip=tooltip)
            .properties(width=width, height=height)
        )

    return Part(key, make, (table,))


def temperature_chart(*args: Any, **options: Any) -> alt.HConcatChart:
    """`temperature_part` as an Altair chart, its data inline."""
    return chart_of(temperature_part(*args, **options))


def temperature_part(
    temperatures: np.ndarray,
    results: np.ndarray,
    weights: np.ndarray,
    key_names: Sequence[str],
    *,
    hard_result: float,
    mean_value: float,
    current: float,
    value_name: str = "value",
    ticks: Sequence[float] | None = None,
    width: int = 380,
    height: int = 240,
) -> Part:
    """Two panels against the temperature (log axis), the current temperature marked by a vertical rule.

    Left: the soft result, between the hard result (dashed, reached as tau -> 0) and the
    plain average of the values (dotted, reached as tau -> infinity). Right: each key's weight.
    ``ticks`` are the temperatures labelled on the x axis (e.g. the slider's stops).
    """
    taus = np.asarray(temperatures, dtype=np.float64)
    res = np.asarray(results, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    n = len(key_names)
    if res.shape != taus.shape or w.shape != (taus.size, n):
        raise ValueError(f"need results {taus.shape} and weights ({taus.size}, {n}); got {res.shape} and {w.shape}.")
    now = Rows({"temperature": [float(current)], "label": [f"τ = {current:g}"]})
    results_table = Rows({"temperature": taus, "result": res})
    refs = Rows({"result": [float(hard_result), float(mean_value)],
                 "label": [f"hard result {hard_result:.2f}", f"average of all values {mean_value:.2f}"],
                 "dash": ["hard", "average"]})
    weights_table = Rows({
        "temperature": np.repeat(taus, n),
        "key": list(key_names) * taus.size,
        "weight": w.ravel(),  # (n_temps, N) row-major: temperature-major, matching the two columns above
    })
    tables = (now, results_table, refs, weights_table)
    key = ("temperature", float(taus.min()), float(taus.max()), taus.size, frozen(key_names), value_name,
           frozen(ticks), width, height)

    def make(data: DataSource) -> alt.HConcatChart:
        now_data, res_data, refs_data, w_data = data(), data(), data(), data()
        x = alt.X(field="temperature", type="quantitative", title="temperature τ (log scale)",
                  scale=alt.Scale(type="log", domain=[float(taus.min()), float(taus.max())], nice=False),
                  axis=alt.Axis(values=[float(t) for t in ticks], format="~g") if ticks is not None else alt.Undefined)
        rule = alt.Chart(now_data).mark_rule(color="black", strokeDash=[2, 2]).encode(
            x=x, tooltip=[alt.Tooltip(field="temperature", type="quantitative", title="current τ")])

        left = _result_panel(res_data, refs_data, x, rule, value_name).properties(width=width, height=height)
        right = _weights_panel(w_data, x, rule, key_names).properties(width=width, height=height)
        return alt.hconcat(left, right, spacing=36).resolve_scale(color="independent")

    return Part(key, make, tables)


def _result_panel(res_data: alt.Data, refs_data: alt.Data, x: alt.X, rule: alt.Chart,
                  value_name: str) -> alt.LayerChart:
    """The soft result against τ, between the hard result (dashed) and the average of the values (dotted)."""
    line = alt.Chart(res_data).mark_line(color=LOOKUP_COLORS["soft (softmax)"], strokeWidth=2.5).encode(
        x=x, y=alt.Y(field="result", type="quantitative", title=f"soft result ({value_name})"),
        tooltip=[alt.Tooltip(field="temperature", type="quantitative", title="τ", format=".3g"),
                 alt.Tooltip(field="result", type="quantitative", title="soft result", format=".4f")],
    )
    ref_y = alt.Y(field="result", type="quantitative")
    ref_rules = alt.Chart(refs_data).mark_rule(strokeWidth=1.5).encode(
        y=ref_y,
        strokeDash=alt.StrokeDash(field="dash", type="nominal", legend=None,
                                  scale=alt.Scale(domain=["hard", "average"], range=[[6, 3], [1, 3]])),
        color=alt.value(LOOKUP_COLORS["hard (argmax)"]),
        tooltip=[alt.Tooltip(field="label", type="nominal", title="reference")],
    )
    ref_text = alt.Chart(refs_data).mark_text(align="left", x=4, dy=-7, fontSize=11,
                                              color=LOOKUP_COLORS["hard (argmax)"]).encode(
        y=ref_y, text=alt.Text(field="label", type="nominal"))
    return alt.layer(ref_rules, ref_text, line, rule, title="The soft result between hard and average")


def _weights_panel(w_data: alt.Data, x: alt.X, rule: alt.Chart, key_names: Sequence[str]) -> alt.LayerChart:
    """Each key's weight against τ, one line per key."""
    w_lines = alt.Chart(w_data).mark_line(strokeWidth=2).encode(
        x=x, y=alt.Y(field="weight", type="quantitative", title="weight", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color(field="key", type="nominal", title="key", sort=list(key_names),
                        scale=alt.Scale(range=list(CATEGORY)), legend=alt.Legend(orient="right")),
        tooltip=[alt.Tooltip(field="key", type="nominal", title="key"),
                 alt.Tooltip(field="temperature", type="quantitative", title="τ", format=".3g"),
                 alt.Tooltip(field="weight", type="quantitative", title="weight", format=".4f")],
    )
    return alt.layer(w_lines, rule, title="Each key's weight")


def page_specs(shop: TinyDictionary, query_name: str, lookup: LookupComparison) -> dict[str, dict]:
    """The page's two charts as Vega-Lite specs: the keys with the weights beside them ("lookup"), and the
    temperature sweep ("sweep")."""
    names = list(shop.key_names)
    keys_and_weights = compose(
        side_by_side,
        key_space_part(shop.keys, names, shop.queries[query_name], lookup.soft_weights, lookup.scores, shop.values,
                        dims=shop.key_dims, query_label=f"q: {query_name}", value_name=shop.value_name,
                        title="Keys in (sweet, sour) space, sized by soft weight"),
        lookup_weights_part(names, lookup.hard_weights, lookup.soft_weights,
                             title=f"Weights: hard vs soft at τ = {lookup.temperature:g}"),
        spacing=48,
    )
    sweep = temperature_part(lookup.sweep_temperatures, lookup.sweep_results, lookup.sweep_weights, names,
                              hard_result=lookup.hard_result, mean_value=float(shop.values.mean()),
                              current=lookup.temperature, value_name=shop.value_name,
                              ticks=(0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0))
    return {"lookup": part_spec(keys_and_weights), "sweep": part_spec(sweep)}
