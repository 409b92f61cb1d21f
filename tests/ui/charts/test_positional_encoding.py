"""Chart builders of the positional-encoding and masked-attention pages, tested through `to_dict()`."""


import numpy as np
import pandas as pd

from core.positional_analysis import sampled_waves
from ui.charts.heatmap import heatmap
from ui.charts.positional_encoding import wave_chart, wavelength_chart, waves_spec, with_legend_length

BY_DIMENSION = {"field": "dimension", "op": "min", "order": "ascending"}


def test_wave_and_wavelength_charts():
    curves = pd.DataFrame({"position": [0.0, 0.5, 1.0], "value": [0.0, 0.48, 0.84], "series": ["dim 0"] * 3,
                           "dimension": [0] * 3})
    spec = wave_chart(curves, curves.iloc[[0, 2]], title="waves").to_dict()
    line, dots = spec["layer"]
    assert line["mark"]["type"] == "line" and dots["mark"]["type"] == "point"
    assert line["encoding"]["y"]["scale"]["domain"] == [-1.05, 1.05]
    assert line["encoding"]["color"]["sort"] == dots["encoding"]["color"]["sort"] == BY_DIMENSION
    assert len(wave_chart(curves).to_dict()["layer"]) == 1
    ladder = pd.DataFrame({"dimension": [0, 1], "wavelength": [6.28, 6.28]})
    chosen = ladder.assign(series=["dim 0", "dim 1"])
    wl = wavelength_chart(ladder, chosen).to_dict()
    assert wl["layer"][0]["encoding"]["y"]["scale"]["type"] == "log"
    assert wl["layer"][1]["encoding"]["color"]["sort"] == BY_DIMENSION


def test_the_waves_legend_follows_the_dimensions_and_d_model_changes_only_the_data():
    """The legend's labels quote each wavelength, which d_model changes: they are data, ordered by the dimension
    (dim 2 before dim 10, which their text would not give), so every d_model shares one structure."""
    specs = [waves_spec(sampled_waves(5, d_model, (0, 2, 10, 11))) for d_model in (16, 64, 512)]
    structures = [{k: v for k, v in spec.items() if k != "datasets"} for spec in specs]
    assert structures[0] == structures[1] == structures[2]
    for spec in specs:
        curves, chosen = pd.DataFrame(spec["datasets"]["d0"].rows()), pd.DataFrame(spec["datasets"]["d3"].rows())
        assert chosen["dimension"].tolist() == [0, 2, 10, 11]
        assert [label.split(" · ")[0] for label in chosen["series"]] == ["dim 0", "dim 2", "dim 10", "dim 11"]
        assert (curves["series"].str.split(" ").str[1].astype(int) == curves["dimension"]).all()
    assert len({tuple(row["series"] for row in spec["datasets"]["d3"]) for spec in specs}) == 3  # the labels did change


def test_every_curve_of_the_picker_s_eight_differs_from_the_others_in_colour_or_dash():
    """Six colours, up to eight curves: past the sixth a curve is dashed. Rendered for real (vl-convert), the one
    legend shows each entry in its curve's colour and dash, in the dimensions' order."""
    import json
    import re

    import vl_convert as vlc

    spec = waves_spec(sampled_waves(5, 16, tuple(range(8))))
    svg = vlc.vegalite_to_svg(json.loads(json.dumps(spec, default=lambda table: table.rows())))
    entries = re.findall(r'role-legend-symbol.*?stroke="(#\w+)".*?stroke-dasharray="([\d,]+)".*?'
                         r'role-legend-label.*?>(dim \d+)', svg)
    assert [label for _, _, label in entries] == [f"dim {d}" for d in range(8)]
    assert len({(colour, dash) for colour, dash, _ in entries}) == 8
    assert len({colour for colour, _, _ in entries}) == 6
    assert [dash for _, dash, _ in entries] == ["1,0"] * 6 + ["6,3"] * 2


def test_with_legend_length_changes_a_copy_only():
    chart = heatmap(np.eye(30), cell_size=10)
    short = with_legend_length(chart, 200)
    assert short.to_dict()["layer"][0]["encoding"]["color"]["legend"]["gradientLength"] == 200
    assert chart.to_dict()["layer"][0]["encoding"]["color"]["legend"]["gradientLength"] != 200
