"""Chart builders of the positional-encoding and masked-attention pages, tested through `to_dict()`."""

import base64
import io

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from core import causal_mask, positional_encoding
from tests.spec_helpers import colour_domain, exported
from ui.charts import heatmap
from ui.export import chart_to_svg
from ui.positional_charts import (
    MASKED_GREY,
    SCHEME_STOPS,
    colorize,
    default_domain,
    mask_chart,
    masked_heatmap,
    raster_heatmap,
    raster_image_uri,
    step_bars,
    wave_chart,
    wavelength_chart,
    with_legend_length,
)


def hex_rgb(h):
    return [int(h[i : i + 2], 16) for i in (0, 2, 4)]


def decode(uri):
    assert uri.startswith("data:image/png;base64,")
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1]))).convert("RGB"))


def single_data(spec):
    (values,) = spec["datasets"].values()
    return pd.DataFrame(values)


def test_colorize_hits_the_vega_scheme_stops():
    stops = SCHEME_STOPS["blueorange"]
    rgb = colorize(np.array([[-1.0, 0.0, 1.0, 5.0]]), signed=True, domain=(-1.0, 1.0))
    assert rgb.dtype == np.uint8 and rgb.shape == (1, 4, 3)
    assert rgb[0, 0].tolist() == hex_rgb(stops[:6])  # low end
    assert rgb[0, 1].tolist() == hex_rgb(stops[30:36])  # 0 is the middle (6th of 11) stop
    assert rgb[0, 2].tolist() == hex_rgb(stops[-6:]) == rgb[0, 3].tolist()  # high end; beyond is clipped
    weights = colorize(np.array([[0.0, 1.0]]), signed=False)
    assert weights[0, 0].tolist() == hex_rgb(SCHEME_STOPS["viridis"][:6])
    assert weights[0, 1].tolist() == hex_rgb(SCHEME_STOPS["viridis"][-6:])
    halfway = colorize(np.array([[0.1]]), domain=(-1.0, 1.0))  # t = 0.55: halfway between stops 5 and 6
    expected = (np.array(hex_rgb(stops[30:36])) + np.array(hex_rgb(stops[36:42]))) / 2
    assert np.abs(halfway[0, 0].astype(float) - expected).max() <= 0.5
    with pytest.raises(ValueError, match="2-D"):
        colorize(np.ones(3))


def test_default_domain_ignores_minus_infinity():
    assert default_domain(np.array([[-np.inf, 2.0], [-3.0, 1.0]]), signed=True) == (-3.0, 3.0)
    assert default_domain(np.zeros((2, 2)), signed=True) == (-1.0, 1.0)
    assert default_domain(np.zeros((2, 2)), signed=False) == (0.0, 1.0)


def test_raster_image_is_one_pixel_per_cell():
    pe = positional_encoding(37, 11)
    img = decode(raster_image_uri(pe))
    assert img.shape == (37, 11, 3)  # rows = positions, top row = position 0
    np.testing.assert_array_equal(img, colorize(pe))


def test_raster_heatmap_spec():
    spec = raster_heatmap("data:image/png;base64,AAAA", (512, 64), domain=(-1.0, 1.0), title="PE",
                          x_title="dimension", y_title="position", max_size=500).to_dict()
    assert spec["mark"]["type"] == "image" and spec["mark"]["aspect"] is False
    enc = spec["encoding"]
    assert enc["x"]["scale"]["domain"] == [0, 64] and enc["y"]["scale"]["domain"] == [0, 512]
    assert enc["y"]["scale"]["reverse"] is True  # row 0 at the top
    assert {"x2", "y2", "url"} <= set(enc)
    assert enc["x"]["title"] == "dimension" and enc["y"]["title"] == "position"
    assert enc["color"]["scale"] == {"domain": [-1.0, 1.0], "domainMid": 0, "scheme": "blueorange"}
    assert single_data(spec)[["x", "y", "x2", "y2"]].values.tolist() == [[0.0, 0.0, 64.0, 512.0]]
    assert spec["height"] == 500 and 220 <= spec["width"] < 500  # tall and narrow, never collapsed
    flat = raster_heatmap("x", (1, 512), domain=(0.0, 1.0), signed=False).to_dict()
    assert flat["height"] == 220 and flat["encoding"]["color"]["scale"]["scheme"] == "viridis"


def test_masked_heatmap_draws_minus_infinity_as_grey_text():
    m = np.array([[0.5, -np.inf], [-1.25, 2.0]])
    spec = exported(masked_heatmap(m, ["a", "b"], title="scores"))
    df = single_data(spec)
    assert df["label"].tolist() == ["0.500", "−∞", "-1.250", "2.000"]
    assert df["masked"].tolist() == [False, True, False, False]
    assert df["shade"].tolist() == [0.5, 0.0, -1.25, 2.0]
    rect, text = spec["layer"]
    color = rect["encoding"]["color"]
    assert color["condition"] == {"test": "datum.masked", "value": MASKED_GREY}
    assert color["field"] == "shade" and colour_domain(spec, color["scale"]) == [-2.0, 2.0]
    assert text["encoding"]["text"]["field"] == "label"
    assert len(masked_heatmap(m, ["a", "b"], show_values=False).to_dict()["layer"]) == 1
    with pytest.raises(ValueError, match="finite values and -inf only"):
        masked_heatmap(np.array([[np.nan]]), ["a"])


@pytest.mark.parametrize("builder", ["mask", "scores"])
def test_masked_maps_take_tooltip_lines_and_highlight_a_row(builder):
    mask = causal_mask(3)
    why = np.where(mask, "may attend", "masked").astype(object)
    if builder == "mask":
        chart = mask_chart(mask, ["x", "y", "z"], extra={"why": why}, highlight_rows=[1])
    else:
        scores = np.where(mask, 1.0, -np.inf)
        chart = masked_heatmap(scores, ["x", "y", "z"], extra={"why": why}, highlight_rows=[1])
    spec = chart.to_dict()
    df = single_data(spec)
    assert df["x0"].tolist() == why.ravel().tolist()
    assert {"field": "x0", "type": "nominal", "title": "why"} in spec["encoding"]["tooltip"]
    assert df["alpha"].tolist() == [0.25] * 3 + [1.0] * 3 + [0.25] * 3
    assert df["edge"].tolist() == ["white"] * 3 + ["black"] * 3 + ["white"] * 3
    assert spec["layer"][0]["encoding"]["opacity"]["field"] == "alpha"
    assert "<svg" in chart_to_svg(spec)  # Vega itself can draw it (a schema-valid spec may still fail there)
    plain = (mask_chart(mask, ["x", "y", "z"]) if builder == "mask" else
             masked_heatmap(np.zeros((3, 3)), ["x", "y", "z"])).to_dict()
    assert "opacity" not in plain["layer"][0]["encoding"] and "alpha" not in single_data(plain)


def test_mask_chart_has_two_labelled_states():
    spec = mask_chart(causal_mask(3), ["x", "y", "z"]).to_dict()
    df = single_data(spec)
    assert df["state"].tolist() == ["may attend", "masked", "masked", "may attend", "may attend", "masked",
                                    "may attend", "may attend", "may attend"]
    assert spec["layer"][0]["encoding"]["color"]["scale"]["domain"] == ["may attend", "masked"]
    with pytest.raises(ValueError, match="boolean"):
        mask_chart(np.eye(2), ["a", "b"])


def test_step_bars_split_visible_and_future_keys():
    rows = {"no mask": np.array([0.2, 0.3, 0.5]), "mask": np.array([0.4, 0.6, 0.0])}
    spec = step_bars(rows, ["a", "b", "c"], step=2).to_dict()
    assert [p["title"] for p in spec["hconcat"]] == ["no mask", "mask"]
    datasets = [pd.DataFrame(spec["datasets"][p["data"]["name"]]) for p in spec["hconcat"]]
    assert datasets[1]["weight"].tolist() == [0.4, 0.6, 0.0]
    assert datasets[0]["status"].tolist() == ["visible (j ≤ t)", "visible (j ≤ t)", "future (j > t)"]
    shade, bars, _ = spec["hconcat"][0]["layer"]
    assert shade["transform"] == [{"filter": "datum.j >= 2"}]
    assert bars["encoding"]["x"]["sort"] == ["a", "b", "c"]  # sentence order, not alphabetical
    with pytest.raises(ValueError, match="shape"):
        step_bars({"bad": np.ones(2)}, ["a", "b", "c"], step=1)


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
