"""A big matrix as one image: `raster_heatmap`.

Up to 512 x 512 = 262 144 cells drawn as one PNG, one pixel per cell, coloured with exactly the Vega scheme
the rect heatmaps use (`ui.charts.heatmap`). One image mark instead of 262 144 rect marks keeps the browser
fast and shows every cell (no downsampling, so no aliasing of the fast sine waves).
"""

from __future__ import annotations

import base64
import io
from typing import Any

import altair as alt
import numpy as np
from PIL import Image

from ui.charts.heatmap import DIVERGING_SCHEME, SEQUENTIAL_SCHEME
from ui.charts.inline_data import Rows
from ui.charts.template import DataSource, Make, chart_of, part_builder

#: Colour stops of the Vega schemes (from vega-scale), interpolated linearly in RGB as Vega does.
SCHEME_STOPS: dict[str, str] = {
    DIVERGING_SCHEME: "134b852f78b35da2cb9dcae1d2e5eff2f0ebfce0bafbbf74e8932fc5690d994a07",
    SEQUENTIAL_SCHEME: (
        "440154470e61481a6c482575472f7d443a834144873d4e8a39568c35608d31688e2d708e2a788e27818e23888e21918d"
        "1f988b1fa08822a8842ab07f35b77943bf7154c56866cc5d7ad1518fd744a5db36bcdf27d2e21be9e51afde725"
    ),
}


def _stops(scheme: str) -> np.ndarray:
    hexes = SCHEME_STOPS[scheme]
    return np.array([[int(hexes[i + c : i + c + 2], 16) for c in (0, 2, 4)] for i in range(0, len(hexes), 6)],
                    dtype=np.float64)  # (n_stops, 3)


def default_domain(matrix: np.ndarray, signed: bool) -> tuple[float, float]:
    """Symmetric ``[-m, m]`` around 0 for signed values (m = largest |finite value|), ``[0, 1]`` for weights."""
    if not signed:
        return (0.0, 1.0)
    finite = np.asarray(matrix, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    m = float(np.max(np.abs(finite))) if finite.size else 0.0
    return (-(m or 1.0), m or 1.0)


def colorize(matrix: np.ndarray, *, signed: bool = True, domain: tuple[float, float] | None = None) -> np.ndarray:
    """RGB image ``(rows, cols, 3)`` uint8 of `matrix` under the app's colour scale (values clipped to `domain`)."""
    m = np.asarray(matrix, dtype=np.float64)
    if m.ndim != 2 or m.size == 0:
        raise ValueError(f"colorize needs a non-empty 2-D matrix, got shape {m.shape}.")
    lo, hi = domain if domain is not None else default_domain(m, signed)
    stops = _stops(DIVERGING_SCHEME if signed else SEQUENTIAL_SCHEME)
    t = np.clip((m - lo) / ((hi - lo) or 1.0), 0.0, 1.0) * (len(stops) - 1)  # position along the stops
    k = np.minimum(t.astype(np.int64), len(stops) - 2)  # left stop of each cell's segment
    frac = (t - k)[..., None]  # (rows, cols, 1)
    rgb = stops[k] * (1 - frac) + stops[k + 1] * frac  # (rows, cols, 3)
    return np.rint(rgb).astype(np.uint8)


def raster_image_uri(matrix: np.ndarray, *, signed: bool = True, domain: tuple[float, float] | None = None) -> str:
    """`matrix` as a ``data:image/png;base64,...`` URI, one pixel per cell (row 0 at the top)."""
    buf = io.BytesIO()
    Image.fromarray(colorize(matrix, signed=signed, domain=domain), mode="RGB").save(buf, format="PNG",
                                                                                   compress_level=6)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def raster_heatmap(image_uri: str, shape: tuple[int, int], **options: Any) -> alt.Chart:
    """`raster_part` as an Altair chart, its data inline."""
    return chart_of(raster_part(image_uri, shape, **options))


@part_builder(data=("image_uri",))
def raster_part(
    image_uri: str,
    shape: tuple[int, int],
    *,
    domain: tuple[float, float],
    signed: bool = True,
    title: str = "",
    x_title: str = "column",
    y_title: str = "row",
    max_size: int = 560,
    min_size: int = 220,
) -> tuple[list[Rows], Make]:
    """A heatmap drawn as one image (see `raster_image_uri`), with numeric axes and a colour legend.

    Cell ``(i, j)`` covers ``[j, j+1] x [i, i+1]`` on the axes; row 0 is at the top,
    as in a printed matrix. The colour legend shows `domain` on the same scale
    the image was painted with. Streamlit fits the whole chart (title, axes and legend included) into
    width x height, hence `min_size`: a one-row matrix still gets a visible band.
    """
    n_rows, n_cols = shape
    width = int(np.clip(max_size * n_cols / max(n_rows, n_cols), min_size, max_size))
    height = int(np.clip(max_size * n_rows / max(n_rows, n_cols), min_size, max_size))
    lo, hi = domain
    scale = (alt.Scale(scheme=DIVERGING_SCHEME, domain=[lo, hi], domainMid=0) if signed
             else alt.Scale(scheme=SEQUENTIAL_SCHEME, domain=[lo, hi]))
    x = alt.X(field="x", type="quantitative", title=x_title, scale=alt.Scale(domain=[0, n_cols], nice=False, zero=True),
              axis=alt.Axis(orient="top", tickMinStep=1, format="d"))
    y = alt.Y(field="y", type="quantitative", title=y_title,
              scale=alt.Scale(domain=[0, n_rows], nice=False, zero=True, reverse=True),
              axis=alt.Axis(tickMinStep=1, format="d"))
    # x/x2 and y/y2 pin the image's corners to the axes, so it stays aligned however the chart is sized.
    # The colour channel paints nothing on an image; it only draws the legend of the scale the image
    # was coloured with (one mark, no extra layer).
    table = Rows({"x": [0.0], "y": [0.0], "x2": [float(n_cols)], "y2": [float(n_rows)], "value": [float(lo)],
                  "url": np.asarray([image_uri], dtype=object)})
    legend = alt.Legend(orient="right", gradientLength=int(np.clip(height - 80, 60, 240)))

    def make(data: DataSource) -> alt.Chart:
        return alt.Chart(data(), title=title or alt.Undefined).mark_image(aspect=False, smooth=False).encode(
            x=x, y=y, x2=alt.X2(field="x2"), y2=alt.Y2(field="y2"), url=alt.Url(field="url", type="nominal"),
            color=alt.Color(field="value", type="quantitative", scale=scale, title=None, legend=legend),
        ).properties(width=width, height=height)

    return [table], make
