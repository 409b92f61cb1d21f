"""Chart builders of the positional-encoding and masked-attention pages, tested through `to_dict()`."""

import base64
import io

import numpy as np
import pytest
from PIL import Image

from core import positional_encoding
from tests.helpers.specs import single_data
from ui.charts.palette import SCHEME_STOPS, SEQUENTIAL_SCHEME
from ui.charts.raster import colorize, default_domain, raster_heatmap, raster_image_uri


def hex_rgb(h):
    return [int(h[i : i + 2], 16) for i in (0, 2, 4)]


def decode(uri):
    assert uri.startswith("data:image/png;base64,")
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1]))).convert("RGB"))


def test_colorize_hits_the_vega_scheme_stops():
    stops = SCHEME_STOPS["blueorange"]
    rgb = colorize(np.array([[-1.0, 0.0, 1.0, 5.0]]), signed=True, domain=(-1.0, 1.0))
    assert rgb.dtype == np.uint8 and rgb.shape == (1, 4, 3)
    assert rgb[0, 0].tolist() == hex_rgb(stops[:6])  # low end
    assert rgb[0, 1].tolist() == hex_rgb(stops[30:36])  # 0 is the middle (6th of 11) stop
    assert rgb[0, 2].tolist() == hex_rgb(stops[-6:]) == rgb[0, 3].tolist()  # high end; beyond is clipped
    weights = colorize(np.array([[0.0, 1.0]]), signed=False)
    viridis = SCHEME_STOPS["viridis"]
    assert weights[0, 0].tolist() == hex_rgb(viridis[:6])
    # weights end at 0.55 of viridis (its extent): halfway between its 17th and 18th of 31 stops, not its yellow
    assert SEQUENTIAL_SCHEME == {"name": "viridis", "extent": [0.0, 0.55]}
    end = (np.array(hex_rgb(viridis[16 * 6:17 * 6])) + np.array(hex_rgb(viridis[17 * 6:18 * 6]))) / 2
    assert np.abs(weights[0, 1].astype(float) - end).max() <= 0.5
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
    assert flat["height"] == 220 and flat["encoding"]["color"]["scale"]["scheme"] == SEQUENTIAL_SCHEME
