"""Chart builders of the positional-encoding and masked-attention pages, tested through `to_dict()`."""


import numpy as np
import pandas as pd

from ui.charts.heatmap import heatmap
from ui.charts.positional_encoding import wave_chart, wavelength_chart, with_legend_length


def test_wave_and_wavelength_charts():
    curves = pd.DataFrame({"position": [0.0, 0.5, 1.0], "value": [0.0, 0.48, 0.84], "series": ["dim 0"] * 3})
    spec = wave_chart(curves, curves.iloc[[0, 2]], series_order=["dim 0"], title="waves").to_dict()
    line, dots = spec["layer"]
    assert line["mark"]["type"] == "line" and dots["mark"]["type"] == "point"
    assert line["encoding"]["y"]["scale"]["domain"] == [-1.05, 1.05]
    assert line["encoding"]["color"]["scale"]["domain"] == ["dim 0"]
    assert len(wave_chart(curves).to_dict()["layer"]) == 1
    ladder = pd.DataFrame({"dimension": [0, 1], "wavelength": [6.28, 6.28]})
    chosen = ladder.assign(series=["dim 0", "dim 1"])
    wl = wavelength_chart(ladder, chosen, series_order=["dim 0", "dim 1"]).to_dict()
    assert wl["layer"][0]["encoding"]["y"]["scale"]["type"] == "log"
    assert wl["layer"][1]["encoding"]["color"]["scale"]["domain"] == ["dim 0", "dim 1"]


def test_with_legend_length_changes_a_copy_only():
    chart = heatmap(np.eye(30), cell_size=10)
    short = with_legend_length(chart, 200)
    assert short.to_dict()["layer"][0]["encoding"]["color"]["legend"]["gradientLength"] == 200
    assert chart.to_dict()["layer"][0]["encoding"]["color"]["legend"]["gradientLength"] != 200
