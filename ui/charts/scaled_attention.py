"""The scaling page's charts: the attention map at one setting, and statistics against d_k (log axis), with
and without the 1/sqrt(d_k).

Pure functions (`core.scaling` results in, `alt.Chart` or spec out), tested through ``to_dict()``. The two
series are told apart by colour (a colour-blind-safe blue/red pair) *and* by point
shape; the current d_k is a vertical rule with the active series' value ringed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import altair as alt
import numpy as np

from core.scaling import ScalingExample, ScoreSweep
from ui.charts.arrange import side_by_side
from ui.charts.heatmap import heatmap_part
from ui.charts.inline_data import Rows
from ui.charts.palette import BLUE, CATEGORY, REFERENCE_GREY, VERMILLION
from ui.charts.template import DataSource, Make, Part, chart_of, compose, part_builder, part_spec
from ui.charts.tooltips import softmax_tooltips

UNSCALED = "unscaled: Q Kᵀ"
SCALED = "scaled: Q Kᵀ / √d_k"
#: Series colours and point shapes, fixed so every panel (and the page's text) agrees.
SERIES_COLORS = {UNSCALED: VERMILLION, SCALED: BLUE}
SERIES_SHAPES = {UNSCALED: "triangle-up", SCALED: "circle"}
REFERENCE_COLOR = REFERENCE_GREY


@dataclass(frozen=True)
class Panel:
    """One panel of a `sweep_chart`: a statistic against d_k, one curve per series.

    ``series`` maps a name (`UNSCALED`, `SCALED`, ...) to one value per d_k;
    ``references`` maps a label to a constant or one value per d_k (e.g. the theory
    ``d_k``), drawn dashed grey and labelled at the right end.
    """

    title: str
    series: Mapping[str, np.ndarray]
    references: Mapping[str, np.ndarray | float] = field(default_factory=dict)


def sweep_columns(d_k: np.ndarray, panels: Sequence[Panel]) -> dict[str, np.ndarray | list]:
    """One long-form table for all panels, as its columns: ``panel, role ("series"/"reference"), name, d_k,
    value``."""
    d = np.asarray(d_k)
    labels: list[tuple[str, str, str]] = []  # (panel, role, name) of each curve
    curves: list[np.ndarray] = []  # its values, one per d_k
    for p in panels:
        for role, named in (("series", p.series), ("reference", p.references)):
            for name, ys in named.items():
                vals = np.asarray(ys, dtype=np.float64)
                if role == "series" and vals.shape != d.shape:
                    raise ValueError(f"series {name!r} of panel {p.title!r} has shape {vals.shape}, "
                                     f"but d_k has shape {d.shape}.")
                try:
                    curves.append(np.broadcast_to(vals, d.shape))
                except ValueError:
                    raise ValueError(f"reference {name!r} of panel {p.title!r} has shape {vals.shape}, "
                                     f"but d_k has shape {d.shape}.") from None
                labels.append((p.title, role, name))
    n = d.size
    columns = {key: [label[k] for label in labels for _ in range(n)] for k, key in enumerate(("panel", "role", "name"))}
    return {**columns, "d_k": np.tile(d, len(curves)), "value": np.concatenate(curves) if curves else np.empty(0)}


def _where(**equal: object) -> str:
    """A Vega expression that is true where every field equals its value, e.g. ``datum["role"] === "series"``."""
    return " && ".join(f"datum[{json.dumps(k)}] === {json.dumps(v, ensure_ascii=False)}" for k, v in equal.items())


def sweep_chart(d_k: np.ndarray, panels: Sequence[Panel], **options: Any) -> alt.FacetChart:
    """`sweep_part` as an Altair chart, its data inline."""
    return chart_of(sweep_part(tuple(int(d) for d in d_k), panels, **options))


@part_builder()
def sweep_part(
    d_k: tuple[int, ...],
    panels: Sequence[Panel],
    *,
    current_d_k: int,
    active: str | None = None,
    y_title: str = "value",
    log_y: bool = False,
    y_format: str = ".3g",
    columns: int = 3,
    width: int = 210,
    height: int = 200,
) -> tuple[list[Rows], Make]:
    """Statistics against the swept widths `d_k` (log2 axis), one facet per panel, each with its own y range.

    Every panel marks ``current_d_k`` with a vertical rule and rings (and prints)
    the value of the ``active`` series there. This is one faceted layer chart
    over one table (`sweep_columns`), not a grid of separate charts: Altair deep-copies
    every sub-chart when it composes layers and concatenations.
    """
    if not panels:
        raise ValueError("sweep_chart needs at least one panel.")
    d = np.asarray(d_k)
    current = int(current_d_k)
    if current not in d.tolist():
        raise ValueError(f"current_d_k={current} is not one of the swept widths {d.tolist()}.")
    table = Rows(sweep_columns(d, panels))
    names = list(dict.fromkeys(n for p in panels for n in p.series))
    if active is not None and active not in names:
        raise ValueError(f"active series {active!r} is not one of {names}.")

    def make(data: DataSource) -> alt.FacetChart:
        x = alt.X(field="d_k", type="quantitative", title="d_k (log scale)",
                  scale=alt.Scale(type="log", base=2, domain=[int(d.min()), int(d.max())], nice=False),
                  axis=alt.Axis(values=[int(v) for v in d], format="d"))
        y = alt.Y(field="value", type="quantitative", title=y_title,
                  scale=alt.Scale(type="log") if log_y else alt.Scale(zero=True))
        tooltip = [alt.Tooltip(field="panel", type="nominal", title="statistic"),
                   alt.Tooltip(field="name", type="nominal", title="series"),
                   alt.Tooltip(field="d_k", type="quantitative", title="d_k"),
                   alt.Tooltip(field="value", type="quantitative", title="value", format=y_format)]
        here = _where(role="series", name=active if active is not None else names[0], d_k=current)
        layers = [*_reference_layers(y, tooltip, int(d.max())), _series_layer(names, y, tooltip),
                  alt.Chart().transform_filter(here).mark_rule(color="black", strokeDash=[2, 2]).encode(
                      tooltip=[alt.Tooltip(field="d_k", type="quantitative", title="current d_k")])]  # full height
        if active is not None:
            layers += _active_value_layers(here, y, tooltip, y_format, at_end=current == int(d.max()))
        return (
            alt.layer(*layers, data=data())
            .encode(x=x)
            .properties(width=width, height=height)
            .facet(facet=alt.Facet(field="panel", type="nominal", title=None, sort=[p.title for p in panels],
                                   header=alt.Header(labelFontSize=13, labelFontWeight="bold")),
                   columns=columns, spacing=28)
            .resolve_scale(y="independent")
        )

    return [table], make


def _reference_layers(y: alt.Y, tooltip: list[alt.Tooltip], d_max: int) -> list[alt.Chart]:
    """The references (a theory's curve, a constant) as thin dashed grey lines, each named at the last d_k."""
    return [
        alt.Chart().transform_filter(_where(role="reference")).mark_line(
            color=REFERENCE_COLOR, strokeDash=[5, 4], strokeWidth=1.5).encode(
            y=y, detail=alt.Detail(field="name", type="nominal"), tooltip=tooltip),
        alt.Chart().transform_filter(_where(role="reference", d_k=d_max)).mark_text(
            align="right", dx=-2, dy=-7, fontSize=10, color=REFERENCE_COLOR).encode(
            y=y, text=alt.Text(field="name", type="nominal")),
    ]


def _series_layer(names: list[str], y: alt.Y, tooltip: list[alt.Tooltip]) -> alt.Chart:
    """The series as lines with points, told apart by colour and by shape (`SERIES_COLORS`, `SERIES_SHAPES`; any
    other series in the remaining category colours, as squares)."""
    domain = [n for n in SERIES_COLORS if n in names] + [n for n in names if n not in SERIES_COLORS]
    others = [c for c in CATEGORY if c not in SERIES_COLORS.values()]
    colors = [SERIES_COLORS.get(n) or others[i % len(others)] for i, n in enumerate(domain)]
    shapes = [SERIES_SHAPES.get(n, "square") for n in domain]
    return alt.Chart().transform_filter(_where(role="series")).mark_line(strokeWidth=2, point=alt.OverlayMarkDef(
        filled=True, size=45, opacity=1)).encode(
        color=alt.Color(field="name", type="nominal", title=None, scale=alt.Scale(domain=domain, range=colors),
                        legend=alt.Legend(orient="bottom")),
        shape=alt.Shape(field="name", type="nominal", title=None, scale=alt.Scale(domain=domain, range=shapes),
                        legend=alt.Legend(orient="bottom")),
        y=y, tooltip=tooltip)


def _active_value_layers(here: str, y: alt.Y, tooltip: list[alt.Tooltip], y_format: str,
                         at_end: bool) -> list[alt.Chart]:
    """The active series' value at the current d_k, ringed and printed."""
    return [
        alt.Chart().transform_filter(here).mark_point(size=260, strokeWidth=2.5, color="black", filled=False)
        .encode(y=y, tooltip=tooltip),
        # printed to the right of the ring, or to its left at the last d_k so it stays inside the plot
        alt.Chart().transform_filter(here).mark_text(align="right" if at_end else "left", dx=-11 if at_end else 11,
                                                     dy=-12, fontSize=12, fontWeight="bold")
        .encode(y=y, text=alt.Text(field="value", type="quantitative", format=y_format)),
    ]


def attention_maps(scores: np.ndarray, weights: np.ndarray, **options: Any) -> alt.HConcatChart:
    """`attention_maps_part` as an Altair chart, its data inline."""
    return chart_of(attention_maps_part(scores, weights, **options))


def attention_maps_part(
    scores: np.ndarray,
    weights: np.ndarray,
    *,
    labels: Sequence[str],
    scores_title: str,
    weights_title: str = "attention weights",
    max_side: int = 360,
    weight_tooltips: Mapping[str, np.ndarray] | None = None,
) -> Part:
    """The scores (diverging, centred at 0) and the weights (viridis on [0, 1]) of one attention map, side by side.

    Cells shrink with the sequence length so both maps and their legends fit in
    about ``2 * max_side + 220`` pixels at any T; values are printed in the cells up
    to T = 10, and each colour legend is as tall as its map. `weight_tooltips` adds
    lines to a weight cell's tooltip (``{label: (T, T) array}``), e.g. the arithmetic behind it.
    """
    t = len(labels)
    cell = int(np.clip(max_side // t, 11, 44))
    kw = dict(row_labels=labels, col_labels=labels, x_title="key", y_title="query", cell_size=cell,
              show_values=t <= 10, value_format=".2f", font_size=11 if t <= 8 else 10)
    kw["legend_length"] = max(60, cell * t)  # each colour legend as tall as its map
    maps = [heatmap_part(scores, title=scores_title, **kw),
            heatmap_part(weights, signed=False, title=weights_title, extra=weight_tooltips, **kw)]
    return compose(side_by_side, *maps, spacing=40)


def token_labels(seq_len: int) -> list[str]:
    """The maps' names for the T random tokens: t0, t1, …"""
    return [f"t{i}" for i in range(seq_len)]


def page_specs(example: ScalingExample, sweep: ScoreSweep) -> dict[str, dict]:
    """The page's three charts as Vega-Lite specs: the attention map ("maps"), the score variance against d_k
    ("variance") and the softmax's saturation against d_k ("saturation")."""
    seq_len, d_k = example.Q.shape
    labels = token_labels(seq_len)
    # stable: subtract each row's largest score before exp(), as a real softmax does. The weights do not change,
    # but exp() stays finite, which matters here (unscaled scores at d_k = 1024 reach the hundreds).
    arithmetic = softmax_tooltips(example.Q, example.K, row_labels=labels, col_labels=labels, scaled=example.scaled,
                                  stable=True)
    maps = attention_maps_part(example.scores, example.weights, labels=labels,
                          scores_title="scores QKᵀ / √d_k" if example.scaled else "scores QKᵀ",
                          weight_tooltips=arithmetic)

    def unscaled_and_scaled(unscaled: np.ndarray, scaled: np.ndarray) -> dict[str, np.ndarray]:
        return {UNSCALED: unscaled, SCALED: scaled}

    at_this_setting = dict(current_d_k=d_k, active=SCALED if example.scaled else UNSCALED)
    swept = tuple(int(d) for d in sweep.d_k)
    variance = sweep_part(
        swept, [Panel("Variance of the scores", unscaled_and_scaled(sweep.var_raw, sweep.var_scaled),
                          references={"theory: d_k": sweep.d_k.astype(float), "theory: 1": 1.0})],
        y_title="variance (log scale)", log_y=True, y_format=",.4~r", width=420, height=240, **at_this_setting)
    saturation = sweep_part(swept, [
        Panel("Largest weight in a row", unscaled_and_scaled(sweep.max_weight_raw, sweep.max_weight_scaled),
              references={"one-hot": 1.0, "uniform 1/T": 1 / seq_len}),
        Panel("Row entropy (nats)", unscaled_and_scaled(sweep.entropy_raw, sweep.entropy_scaled),
              references={"uniform ln T": np.log(seq_len)}),
        Panel("Softmax Jacobian norm ‖diag(p) − ppᵀ‖_F",
              unscaled_and_scaled(sweep.jacobian_norm_raw, sweep.jacobian_norm_scaled),
              references={"uniform √(T−1)/T": np.sqrt(seq_len - 1) / seq_len}),
    ], y_title="mean over rows", y_format=".3f", **at_this_setting)
    return {name: part_spec(chart, canvas=True)
            for name, chart in (("maps", maps), ("variance", variance), ("saturation", saturation))}
