"""Chart builders of the soft-lookup and scaling pages, tested through `to_dict()`."""

import numpy as np
import pandas as pd
import pytest

from ui.charts.palette import SEQUENTIAL_SCHEME
from ui.charts.scaled_attention import (
    SCALED,
    SERIES_COLORS,
    UNSCALED,
    Panel,
    attention_maps,
    sweep_chart,
    sweep_columns,
)

D = np.array([1, 2, 4, 8])
PANELS = [
    Panel("Variance", {UNSCALED: D * 1.0, SCALED: np.ones(4)}, references={"theory: d_k": D * 1.0, "one": 1.0}),
    Panel("Entropy", {UNSCALED: np.array([2.0, 1.5, 1.0, 0.5]), SCALED: np.full(4, 2.0)}),
]


def test_the_sweep_is_one_long_form_table():
    df = pd.DataFrame(sweep_columns(D, PANELS))
    assert list(df.columns) == ["panel", "role", "name", "d_k", "value"] and len(df) == 4 * 6
    var = df[(df["panel"] == "Variance") & (df["role"] == "reference") & (df["name"] == "one")]
    assert list(var["value"]) == [1.0] * 4 and list(var["d_k"]) == [1, 2, 4, 8]
    with pytest.raises(ValueError, match="series 'a' of panel 'P' has shape"):
        sweep_columns(D, [Panel("P", {"a": np.arange(3.0)})])
    with pytest.raises(ValueError, match="reference 'r' of panel 'P' has shape"):
        sweep_columns(D, [Panel("P", {"a": D * 1.0}, references={"r": np.ones(3)})])


def test_sweep_chart_is_one_facet_per_panel_with_the_current_d_k_marked():
    spec = sweep_chart(D, PANELS, current_d_k=4, active=SCALED, y_title="value", log_y=True).to_dict()
    assert spec["facet"]["field"] == "panel" and spec["facet"]["sort"] == ["Variance", "Entropy"]
    assert spec["resolve"]["scale"]["y"] == "independent"
    rows = spec["datasets"][spec["data"]["name"]]
    assert len(rows) == 24
    inner = spec["spec"]
    x = inner["encoding"]["x"]
    assert x["scale"]["type"] == "log" and x["scale"]["base"] == 2 and x["axis"]["values"] == [1, 2, 4, 8]
    refs, ref_text, lines, rule, ring, ring_text = inner["layer"]
    assert refs["mark"]["strokeDash"] == [5, 4] and 'datum["role"] === "reference"' in refs["transform"][0]["filter"]
    assert 'datum["d_k"] === 8' in ref_text["transform"][0]["filter"]  # labels at the right end
    assert lines["encoding"]["y"]["scale"] == {"type": "log"} and lines["encoding"]["y"]["title"] == "value"
    assert lines["encoding"]["color"]["scale"] == {"domain": list(SERIES_COLORS), "range": list(SERIES_COLORS.values())}
    assert lines["encoding"]["shape"]["field"] == "name" and lines["mark"]["point"]["filled"] is True
    here = f'datum["role"] === "series" && datum["name"] === "{SCALED}" && datum["d_k"] === 4'
    for layer in (rule, ring, ring_text):
        assert layer["transform"][0]["filter"] == here
    assert rule["mark"]["type"] == "rule" and "y" not in rule["encoding"]  # spans the full height
    assert ring_text["encoding"]["text"]["format"] == ".3g" and ring_text["mark"]["align"] == "left"
    # at the last d_k the printed value moves to the left of the ring, inside the plot
    last = sweep_chart(D, PANELS, current_d_k=8, active=UNSCALED).to_dict()["spec"]["layer"][-1]
    assert last["mark"]["align"] == "right" and last["mark"]["dx"] < 0


def test_sweep_chart_without_active_and_linear_y():
    spec = sweep_chart(D, PANELS[1:], current_d_k=8).to_dict()
    layers = spec["spec"]["layer"]
    assert len(layers) == 4 and layers[2]["encoding"]["y"]["scale"] == {"zero": True}
    assert '"d_k"] === 8' in layers[3]["transform"][0]["filter"]


@pytest.mark.parametrize("kwargs, message", [
    (dict(panels=[], current_d_k=1), "at least one panel"),
    (dict(panels=PANELS, current_d_k=16), "current_d_k=16 is not one of the swept widths"),
    (dict(panels=PANELS, current_d_k=1, active="neither"), "active series 'neither'"),
])
def test_sweep_chart_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        sweep_chart(D, **kwargs)


@pytest.mark.parametrize("t, cell, labelled", [(2, 44, True), (8, 44, True), (10, 36, True), (32, 11, False)])
def test_attention_maps_fit_any_sequence_length(t, cell, labelled):
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(t, t))
    weights = np.exp(scores) / np.exp(scores).sum(1, keepdims=True)
    spec = attention_maps(scores, weights, labels=[f"t{i}" for i in range(t)], scores_title="S").to_dict()
    left, right = spec["hconcat"]
    assert left["title"] == "S" and right["title"] == "attention weights"
    for sub in (left, right):
        assert sub["width"] == {"step": cell} and sub["height"] == {"step": cell}
        assert sub["layer"][0]["encoding"]["color"]["legend"]["gradientLength"] == max(60, cell * t)
        assert (len(sub["layer"]) == 2) == labelled
    assert left["layer"][0]["encoding"]["color"]["scale"]["domainMid"] == 0
    assert right["layer"][0]["encoding"]["color"]["scale"]["scheme"] == SEQUENTIAL_SCHEME
