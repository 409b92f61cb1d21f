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

from ui.charts.inline_data import Rows
from ui.charts.palette import DIVERGING_SCHEME, SEQUENTIAL_SCHEME, scheme_rgb
from ui.charts.template import DataSource, Make, chart_of, part_builder


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
    t = (m - lo) / ((hi - lo) or 1.0)  # position on the scale, clipped to [0, 1] by scheme_rgb
    rgb = scheme_rgb(DIVERGING_SCHEME if signed else SEQUENTIAL_SCHEME, t)  # (rows, cols, 3)
    return np.rint(rgb, out=rgb).astype(np.uint8)


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
